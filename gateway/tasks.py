"""Celery tasks of the gateway: the stdio upstreams, which run in the workers for the web
processes (gateway/stdio.py). Each takes an id; the web process waits for the answer in the
database, so nothing is returned through Celery."""

from __future__ import annotations

from celery import shared_task, signals

from gateway import stdio, upstream

# Opening a session (a command's start included) and one call, and a margin to write the answer.
TIME_LIMIT = int(upstream.OPEN_TIMEOUT + upstream.CALL_TIMEOUT + 30)


@shared_task(name=stdio.LIST_TASK, ignore_result=True, soft_time_limit=TIME_LIMIT - 10, time_limit=TIME_LIMIT)
def list_stdio_tools(server_id: int) -> str:
    return stdio.list_tools(server_id)


@shared_task(name=stdio.CALL_TASK, ignore_result=True, soft_time_limit=TIME_LIMIT - 10, time_limit=TIME_LIMIT)
def call_stdio_tool(call_id: str) -> str:
    """Runs at most once per call: a redelivered message finds the call claimed."""
    return stdio.answer(call_id)


@signals.worker_process_shutdown.connect
def _end_commands(**_: object) -> None:
    """A worker process that stops ends the commands it runs (their sessions close, stdin ends)."""
    upstream.WORKER_POOL.close_all()
