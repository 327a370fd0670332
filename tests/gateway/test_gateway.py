"""The gateway: agents reach upstream MCP tools only as their manifest grants them, and every
call passes the platform's checks before anything reaches the upstream."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp.client.session import ClientSession

from agents.models import ToolCall
from agents.registry import load_manifest
from gateway.models import GatewayCall, UpstreamServer
from governance.kernel.principals import SYSTEM
from governance.reviews.services import payload_hash
from tests.support.inbox import decide_in_inbox
from tests.support.keys import issue_key
from tests.support.manifests import manifest_text
from tests.support.mcp import mcp_session
from tests.support.upstream import upstream_server

pytestmark = pytest.mark.django_db(transaction=True)

SQL = "mcp__supabase__execute_sql"


def vlevel_key(*replacements: tuple[str, str]) -> str:
    """agent.seo.vlevel (its manifest grants mcp__supabase__execute_sql, read) with edits."""
    text = manifest_text("agent.seo.vlevel")
    for old, new in replacements:
        assert old in text
        text = text.replace(old, new)
    return issue_key(agent=load_manifest(text, actor=SYSTEM)[0].agent)


def register(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UPSTREAM_TOKEN_SUPABASE", "upstream-secret-token")
    UpstreamServer.objects.create(name="supabase", url=url, secret_name="UPSTREAM_TOKEN_SUPABASE", internal=True)


def test_an_agent_sees_only_the_upstream_tools_its_manifest_grants(live_server, monkeypatch):
    key = vlevel_key()
    with upstream_server() as upstream:
        register(upstream.url, monkeypatch)

        async def work(session: ClientSession) -> Any:
            return await session.list_tools()

        names = {tool.name for tool in mcp_session(live_server.url, key, work).tools}

    assert SQL in names
    assert "mcp__supabase__drop_table" not in names  # the upstream has it; the manifest does not grant it
    assert "submit_job" in names


def test_a_granted_call_is_forwarded_with_the_upstreams_token_never_the_agents_key(live_server, monkeypatch):
    key = vlevel_key()
    with upstream_server() as upstream:
        register(upstream.url, monkeypatch)

        async def work(session: ClientSession) -> Any:
            return await session.call_tool(SQL, {"query": "select 1"})

        result = mcp_session(live_server.url, key, work)

    assert not result.is_error, result.content
    assert result.content[0].text == "rows for select 1"
    assert upstream.calls == [("execute_sql", {"query": "select 1"})]
    assert set(upstream.authorizations) == {"Bearer upstream-secret-token"}
    assert all(key not in seen for seen in upstream.authorizations)
    logged = GatewayCall.objects.get()
    assert (logged.tool_id, logged.outcome, logged.server.name) == (SQL, "ok", "supabase")
    assert logged.latency_ms is not None
    assert logged.latency_ms > 0
    assert logged.arguments == {"query": "select 1"}
    assert logged.arguments_hash == payload_hash({"query": "select 1"})
    assert logged.tool_call == ToolCall.objects.get(tool_id=SQL)  # what the rate limit counts


def test_a_read_grant_never_reaches_a_tool_the_upstream_marks_destructive(live_server, monkeypatch):
    key = vlevel_key()
    with upstream_server(destructive_sql=True) as upstream:
        register(upstream.url, monkeypatch)

        async def work(session: ClientSession) -> Any:
            return await session.call_tool(SQL, {"query": "delete from pages"})

        result = mcp_session(live_server.url, key, work)

    assert result.is_error
    assert json.loads(result.content[0].text)["refusal"] == "Forbidden"
    assert upstream.calls == []
    assert not ToolCall.objects.exists()


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        # No annotations: MCP's defaults make a tool not read-only, and destructive.
        pytest.param("mcp__supabase__wipe", {"all": True}, id="unannotated"),
        # Writes, not destructive: an additive write under a read grant would skip the reviewer a
        # write grant asks for.
        pytest.param("mcp__supabase__add_note", {"text": "planted"}, id="additive-write"),
    ],
)
def test_a_read_grant_never_reaches_a_tool_the_upstream_does_not_mark_read_only(
    live_server, monkeypatch, tool, arguments
):
    """Only a tool the upstream marks read-only is read."""
    key = vlevel_key(
        ("  tools:\n", f"  tools:\n    - tool_id: {tool}\n      permissions: read\n      rate_limit: 10\n")
    )
    with upstream_server() as upstream:
        register(upstream.url, monkeypatch)

        async def work(session: ClientSession) -> Any:
            return await session.call_tool(tool, arguments)

        result = mcp_session(live_server.url, key, work)

    assert result.is_error
    assert json.loads(result.content[0].text)["refusal"] == "Forbidden"
    assert upstream.calls == []
    assert not ToolCall.objects.exists()


def test_calls_past_the_manifests_rate_limit_are_refused_before_the_upstream(live_server, monkeypatch):
    key = vlevel_key(("      rate_limit: 100", "      rate_limit: 2"))
    with upstream_server() as upstream:
        register(upstream.url, monkeypatch)

        async def work(session: ClientSession) -> Any:
            return [await session.call_tool(SQL, {"query": f"select {n}"}) for n in range(3)]

        results = mcp_session(live_server.url, key, work)

    assert [r.is_error for r in results] == [False, False, True]
    assert json.loads(results[2].content[0].text)["refusal"] == "RateLimited"
    assert [c[1]["query"] for c in upstream.calls] == ["select 0", "select 1"]
    logged = list(GatewayCall.objects.order_by("called_at").values_list("outcome", "refusal", "latency_ms"))
    assert [row[:2] for row in logged] == [("ok", ""), ("ok", ""), ("refused", "RateLimited")]
    assert logged[2][2] is None  # never forwarded


def test_a_call_that_requires_approval_waits_then_goes_through_once(live_server, monkeypatch, reviewer, client):
    key = vlevel_key(("      rate_limit: 100", "      rate_limit: 100\n      requires_approval: true"))
    arguments = {"query": "select count(*) from pages"}
    with upstream_server() as upstream:
        register(upstream.url, monkeypatch)

        async def call(session: ClientSession) -> Any:
            return await session.call_tool(SQL, arguments)

        waiting = mcp_session(live_server.url, key, call)
        item_id = json.loads(waiting.content[0].text)["reviewItemId"]
        assert upstream.calls == []

        client.force_login(reviewer)
        decide_in_inbox(client, item_id, "approve", comment="Fine.")
        approved = mcp_session(live_server.url, key, call)
        again = mcp_session(live_server.url, key, call)

    assert waiting.is_error
    assert json.loads(waiting.content[0].text)["refusal"] == "PendingApproval"
    assert not approved.is_error, approved.content
    assert upstream.calls == [("execute_sql", arguments)]  # once: the approval was used
    assert again.is_error


def test_an_unreachable_upstream_hides_its_tools_and_nothing_else(live_server):
    from tests.support.processes import free_port

    key = vlevel_key()
    UpstreamServer.objects.create(name="supabase", url=f"http://127.0.0.1:{free_port()}/mcp", internal=True)

    async def work(session: ClientSession) -> Any:
        listed = await session.list_tools()
        called = await session.call_tool(SQL, {"query": "select 1"})
        return listed, called

    listed, called = mcp_session(live_server.url, key, work)

    names = {tool.name for tool in listed.tools}
    assert "submit_job" in names
    assert SQL not in names
    assert called.is_error
    assert not ToolCall.objects.exists()
    assert GatewayCall.objects.get().refusal == "NotGranted"  # logged, for an operator's eye


def test_admins_manage_upstream_servers_and_viewers_only_see_them(admin_operator, viewer):
    assert admin_operator.has_perm("gateway.add_upstreamserver")
    assert viewer.has_perm("gateway.view_upstreamserver")
    assert not viewer.has_perm("gateway.change_upstreamserver")
