"""Celery tasks of the sessions app: the scheduler tick, timers, and hosted model calls."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.db import OperationalError

from governance.kernel.exceptions import Conflict
from governance.kernel.principals import SYSTEM
from sessions import hosted, scheduler

logger = logging.getLogger(__name__)


@shared_task(name="sessions.tick", ignore_result=True)
def tick() -> dict[str, Any]:
    """Every 5 minutes (beat), and after automation changes and session ends."""
    return scheduler.tick()


@shared_task(name="sessions.tick_agent", ignore_result=True)
def tick_agent(agent_id: int) -> bool:
    """A slot was freed or an automation changed: give the agent its next session now."""
    from django.utils import timezone

    return scheduler.fill_slot(agent_id, now=timezone.now()) is not None


@shared_task(name="sessions.fire_timer", ignore_result=True)
def fire_timer(session_id: str, event: str, at: str) -> bool:
    return scheduler.fire_timer(session_id, event, at)


@shared_task(name="sessions.phase_deadline", ignore_result=True)
def phase_deadline(session_id: str, at: str) -> bool:
    """An active phase's deadline (armed when the phase began); the tick is the backstop."""
    return scheduler.fire_deadline(session_id, at)


@shared_task(
    name="sessions.call_provider",
    ignore_result=True,
    soft_time_limit=hosted.CALL_TIME_LIMIT - 40,
    time_limit=hosted.CALL_TIME_LIMIT,
    acks_late=True,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    retry_jitter=True,
    max_retries=5,
)
def call_provider(session_id: str) -> str:
    """A hosted session's turn to call the model, exactly once per turn (sessions.hosted). A
    database outage is retried with backoff; a transient provider failure goes through the
    session's network retry (durable, in the database), a permanent one ends the session. A
    session that moved on meanwhile is left alone."""
    try:
        return hosted.call_provider(session_id, actor=SYSTEM)
    except Conflict as exc:
        logger.info("[sessions] provider answer dropped: session=%s reason=%s", session_id, exc.detail)
        return "dropped"


@shared_task(name="sessions.simulate_actions", ignore_result=True)
def simulate_actions(session_id: str) -> str:
    try:
        return hosted.simulate_actions(session_id, actor=SYSTEM)
    except Conflict as exc:
        logger.info("[sessions] simulated actions dropped: session=%s reason=%s", session_id, exc.detail)
        return "dropped"
