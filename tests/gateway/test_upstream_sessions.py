"""How the gateway talks to upstreams: one session per upstream and process, kept across agents'
requests; a new one when the upstream forgot it; stdio commands run by a Celery worker (never a
web process), started once per worker process with nothing of its environment but their own
credential; a call no worker takes is withdrawn; a slow tool holds up no other call."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from django.utils import timezone
from mcp.client.session import ClientSession

from agents.registry import load_manifest
from gateway import stdio
from gateway.models import GatewayCall, StdioCall, ToolListing, UpstreamServer
from governance.kernel.principals import SYSTEM
from tests.support.keys import issue_key
from tests.support.manifests import manifest_text
from tests.support.mcp import mcp_session
from tests.support.processes import celery_worker_process, free_port
from tests.support.upstream import stdio_argv, stdio_record, upstream_server

pytestmark = pytest.mark.django_db(transaction=True)

SQL = "mcp__supabase__execute_sql"
SLOW = "mcp__supabase__slow_report"


@pytest.fixture
def key(db) -> str:
    """agent.seo.vlevel, granted execute_sql and slow_report of the supabase upstream."""
    slow = f"    - tool_id: {SLOW}\n      permissions: read\n      rate_limit: 10\n"
    text = manifest_text("agent.seo.vlevel").replace("  tools:\n", "  tools:\n" + slow, 1)
    return issue_key(agent=load_manifest(text, actor=SYSTEM)[0].agent)


def call(live_server: Any, key: str, name: str, arguments: dict[str, Any]) -> Any:
    async def work(session: ClientSession) -> Any:
        return await session.call_tool(name, arguments)

    return mcp_session(live_server.url, key, work)


def test_agents_requests_share_one_upstream_session(live_server, key):
    with upstream_server() as upstream:
        UpstreamServer.objects.create(name="supabase", url=upstream.url, internal=True)

        first = call(live_server, key, SQL, {"query": "select 1"})
        second = call(live_server, key, SQL, {"query": "select 2"})

    assert not first.is_error
    assert not second.is_error
    assert len(upstream.calls) == 2
    assert len(set(upstream.session_ids)) == 1  # initialized once, not once per agent request


def test_an_upstream_that_restarted_gets_a_new_session_and_the_call_runs_once(live_server, key):
    port = free_port()
    with upstream_server(port=port) as before:
        UpstreamServer.objects.create(name="supabase", url=before.url, internal=True)
        call(live_server, key, SQL, {"query": "select 1"})
    with upstream_server(port=port) as after:
        result = call(live_server, key, SQL, {"query": "select 2"})

    assert not result.is_error, result.content
    assert after.calls == [("execute_sql", {"query": "select 2"})]
    assert set(after.session_ids) - set(before.session_ids)  # a session of the new upstream's own


def test_a_slow_tool_holds_up_no_other_call(live_server, key):
    with upstream_server() as upstream:
        UpstreamServer.objects.create(name="supabase", url=upstream.url, internal=True)
        call(live_server, key, SQL, {"query": "warm up"})
        finished: dict[str, float] = {}

        async def one(name: str, arguments: dict[str, Any]) -> None:
            await anyio.to_thread.run_sync(call, live_server, key, name, arguments)
            finished[name] = time.monotonic()

        async def both() -> None:
            async with anyio.create_task_group() as group:
                group.start_soon(one, SLOW, {"seconds": 3})
                await anyio.sleep(0.3)
                group.start_soon(one, SQL, {"query": "select 1"})

        anyio.run(both)

    assert finished[SQL] < finished[SLOW] - 1  # the quick call did not wait for the slow one
    assert ("slow_report", {"seconds": 3}) in upstream.calls


@pytest.fixture
def stdio_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: Any, transactional_db: Any
) -> Iterator[Path]:
    """A real Celery worker that may run the tests' upstream over stdio as ``supabase`` (it writes
    what it sees to the yielded file) and, as ``broken``, a program that does not exist. The web
    process waits long enough for a first listing on a busy machine."""
    monkeypatch.setenv("UPSTREAM_TOKEN_SUPABASE", "upstream-secret-token")
    monkeypatch.setenv("SECRET_KEY", "the-servers-own-secret")
    monkeypatch.setattr(stdio, "LIST_WAIT", 30.0)
    record = tmp_path / "stdio.jsonl"
    settings.GATEWAY_STDIO_COMMANDS = {
        "supabase": {"argv": stdio_argv(record)},
        "broken": {"argv": ["/nonexistent/mcp-server", "--stdio"]},
    }
    commands = json.dumps(settings.GATEWAY_STDIO_COMMANDS)
    with celery_worker_process(tmp_path, wait_ready=True, GATEWAY_STDIO_COMMANDS=commands):
        yield record


@pytest.mark.process
def test_a_stdio_upstream_runs_in_a_worker_kept_open_with_only_its_own_credential(live_server, key, stdio_worker):
    UpstreamServer.objects.create(
        name="supabase", transport="stdio", command="supabase", secret_name="UPSTREAM_TOKEN_SUPABASE"
    )

    async def work(session: ClientSession) -> Any:
        listed = await session.list_tools()
        return listed, [await session.call_tool(SQL, {"query": f"select {n}"}) for n in range(3)]

    listed, results = mcp_session(live_server.url, key, work)

    assert SQL in {tool.name for tool in listed.tools}
    assert [r.content[0].text for r in results] == ["rows for select 0", "rows for select 1", "rows for select 2"]
    starts, calls = stdio_record(stdio_worker)
    assert 1 <= len(starts) <= 2  # at most once per worker process, kept for the next calls
    assert os.getpid() not in {start.parent for start in starts}  # never the web process
    assert calls == [("execute_sql", {"query": f"select {n}"}) for n in range(3)]
    assert all("UPSTREAM_TOKEN_SUPABASE" in start.env for start in starts)
    assert not {"SECRET_KEY", "DATABASE_URL", "EMBEDDED_PGDATA"} & {name for start in starts for name in start.env}
    assert "SECRET_KEY" in os.environ  # the worker had it; the command did not get it
    assert not StdioCall.objects.exists()  # each answer read, and its row gone


@pytest.mark.process
def test_a_stdio_command_that_cannot_start_hides_its_tools_and_nothing_else(live_server, key, stdio_worker):
    UpstreamServer.objects.create(name="supabase", transport="stdio", command="broken")

    async def work(session: ClientSession) -> Any:
        return await session.list_tools()

    names = {tool.name for tool in mcp_session(live_server.url, key, work).tools}

    assert "submit_job" in names
    assert SQL not in names
    assert ToolListing.objects.get().error == "FileNotFoundError"


def test_a_stdio_call_no_worker_takes_is_withdrawn_and_never_runs_late(
    live_server, key, tmp_path, monkeypatch, settings
):
    record = tmp_path / "stdio.jsonl"
    settings.GATEWAY_STDIO_COMMANDS = {"supabase": {"argv": stdio_argv(record)}}
    server = UpstreamServer.objects.create(name="supabase", transport="stdio", command="supabase")
    sql = {"name": "execute_sql", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}}
    ToolListing.objects.create(server=server, command="supabase", tools=[sql], answered_at=timezone.now())
    monkeypatch.setattr(stdio, "PICKUP_WAIT", 1.0)
    queued: list[tuple[str, ...]] = []  # the messages, held back as by workers that are all busy
    monkeypatch.setattr(stdio.dispatch, "send", lambda name, *args: queued.append((name, *args)) or True)

    result = call(live_server, key, SQL, {"query": "select 1"})
    late = [stdio.answer(call_id) for name, call_id in queued if name == stdio.CALL_TASK]  # a worker, at last

    assert result.is_error
    assert '"refusal": "UpstreamFailed"' in result.content[0].text
    assert GatewayCall.objects.get().error_class == "WorkerUnavailable"
    assert late == ["gone"]
    assert stdio_record(record) == ([], [])  # never started
    assert not StdioCall.objects.exists()


def test_an_upstream_gone_mid_session_is_a_failed_call_logged_with_its_error_class(live_server, key):
    with upstream_server() as upstream:
        UpstreamServer.objects.create(name="supabase", url=upstream.url, internal=True)
        call(live_server, key, SQL, {"query": "select 1"})  # session open, tool list kept
    result = call(live_server, key, SQL, {"query": "select 2"})

    assert result.is_error
    assert '"refusal": "UpstreamFailed"' in result.content[0].text
    failed = GatewayCall.objects.get(outcome="upstream_failed")
    assert failed.error_class
    assert failed.error_class != "ExceptionGroup"
    assert failed.latency_ms is not None
