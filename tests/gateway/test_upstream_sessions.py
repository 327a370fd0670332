"""How the gateway talks to upstreams: one session per upstream and process, kept across agents'
requests; a new one when the upstream forgot it; stdio commands started once, with nothing of
the server's environment but their own credential; a slow tool holds up no other call."""

from __future__ import annotations

import os
import time
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession

from agents.registry import load_manifest
from gateway.models import UpstreamServer
from governance.kernel.principals import SYSTEM
from tests.support.keys import issue_key
from tests.support.manifests import manifest_text
from tests.support.mcp import mcp_session
from tests.support.processes import free_port
from tests.support.upstream import stdio_command, stdio_record, upstream_server

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
        UpstreamServer.objects.create(name="supabase", url=upstream.url)

        first = call(live_server, key, SQL, {"query": "select 1"})
        second = call(live_server, key, SQL, {"query": "select 2"})

    assert not first.is_error
    assert not second.is_error
    assert len(upstream.calls) == 2
    assert len(set(upstream.session_ids)) == 1  # initialized once, not once per agent request


def test_an_upstream_that_restarted_gets_a_new_session_and_the_call_runs_once(live_server, key):
    port = free_port()
    with upstream_server(port=port) as before:
        UpstreamServer.objects.create(name="supabase", url=before.url)
        call(live_server, key, SQL, {"query": "select 1"})
    with upstream_server(port=port) as after:
        result = call(live_server, key, SQL, {"query": "select 2"})

    assert not result.is_error, result.content
    assert after.calls == [("execute_sql", {"query": "select 2"})]
    assert set(after.session_ids) - set(before.session_ids)  # a session of the new upstream's own


def test_a_slow_tool_holds_up_no_other_call(live_server, key):
    with upstream_server() as upstream:
        UpstreamServer.objects.create(name="supabase", url=upstream.url)
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


def test_a_stdio_upstream_is_started_once_with_only_its_own_credential(live_server, key, tmp_path, monkeypatch):
    monkeypatch.setenv("UPSTREAM_TOKEN_SUPABASE", "upstream-secret-token")
    monkeypatch.setenv("SECRET_KEY", "the-servers-own-secret")
    record = tmp_path / "stdio.jsonl"
    UpstreamServer.objects.create(
        name="supabase", transport="stdio", command=stdio_command(record), secret_name="UPSTREAM_TOKEN_SUPABASE"
    )

    async def work(session: ClientSession) -> Any:
        listed = await session.list_tools()
        return listed, [await session.call_tool(SQL, {"query": f"select {n}"}) for n in range(2)]

    listed, results = mcp_session(live_server.url, key, work)

    assert SQL in {tool.name for tool in listed.tools}
    assert [r.content[0].text for r in results] == ["rows for select 0", "rows for select 1"]
    starts, calls = stdio_record(record)
    assert len(starts) == 1  # one process, kept for the next calls
    assert calls == [("execute_sql", {"query": "select 0"}), ("execute_sql", {"query": "select 1"})]
    assert "UPSTREAM_TOKEN_SUPABASE" in starts[0]
    assert not {"SECRET_KEY", "DATABASE_URL", "EMBEDDED_PGDATA"} & set(starts[0])
    assert "SECRET_KEY" in os.environ  # the server had it; the command did not get it


def test_a_stdio_command_that_cannot_start_hides_its_tools_and_nothing_else(live_server, key):
    UpstreamServer.objects.create(name="supabase", transport="stdio", command="/nonexistent/mcp-server --stdio")

    async def work(session: ClientSession) -> Any:
        return await session.list_tools()

    names = {tool.name for tool in mcp_session(live_server.url, key, work).tools}

    assert "submit_job" in names
    assert SQL not in names


def test_an_upstream_gone_mid_session_is_a_failed_call_logged_with_its_error_class(live_server, key):
    from gateway.models import GatewayCall

    with upstream_server() as upstream:
        UpstreamServer.objects.create(name="supabase", url=upstream.url)
        call(live_server, key, SQL, {"query": "select 1"})  # session open, tool list kept
    result = call(live_server, key, SQL, {"query": "select 2"})

    assert result.is_error
    assert '"refusal": "UpstreamFailed"' in result.content[0].text
    failed = GatewayCall.objects.get(outcome="upstream_failed")
    assert failed.error_class
    assert failed.error_class != "ExceptionGroup"
    assert failed.latency_ms is not None
