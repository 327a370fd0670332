"""Every refusal /mcp gives a caller holding one of our keys is in the audit trail, as on the REST
API: one ``access.refused`` row naming the caller, the transport (``mcp``) and the refused method
and tool, resource or prompt; a revoked key turned away names whose key it was. Each case is one
request by agent.seo.vlevel's key over the SDK's own client; what the request must not do (reach
the upstream, write) is the functional suites'."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, cast

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types import RequestParamsMeta, TextContent

from agents.models import Agent
from agents.registry import load_manifest
from gateway.models import UpstreamServer
from governance.kernel.principals import SYSTEM, Principal
from governance.kernel.services import issue_api_key, revoke_api_key
from sessions import scheduler
from tests.support.jobs import submit_job
from tests.support.keys import issue_key
from tests.support.manifests import manifest_text
from tests.support.mcp import mcp_session
from tests.support.refusals import last_audit_id, refusals_since
from tests.support.upstream import Upstream, upstream_server

pytestmark = pytest.mark.django_db(transaction=True)

GRANTS = (
    "  tools:\n"
    "    - tool_id: mcp__supabase__drop_table\n      permissions: read\n      rate_limit: 10\n"
    "    - tool_id: mcp__supabase__slow_report\n      permissions: read\n      rate_limit: 1\n"
)


@dataclass
class Fleet:
    """agent.seo.vlevel (calling), granted drop_table under read and slow_report once a minute;
    another agent's job, approval and session to reach for."""

    url: str
    key: str
    upstream: Upstream
    theirs_job: str
    theirs_approval: int
    theirs_session: str


@pytest.fixture
def fleet(live_server, settings) -> Iterator[Fleet]:
    vlevel = load_manifest(manifest_text("agent.seo.vlevel").replace("  tools:\n", GRANTS, 1), actor=SYSTEM)[0].agent
    other = load_manifest(manifest_text("agent.seo.vlevel").replace("agent.seo.vlevel", "agent.seo.b"), actor=SYSTEM)
    other_agent: Agent = other[0].agent
    from agents import approvals

    theirs = Principal(agent=other_agent)
    approval = approvals.request_approval(actor=theirs, title="theirs", details="", payload=None)
    chat = scheduler.start_chat(other_agent, actor=theirs, name="theirs", require_validation=False)
    with upstream_server() as upstream:
        UpstreamServer.objects.create(name="supabase", url=upstream.url, internal=True)
        yield Fleet(
            url=live_server.url,
            key=issue_key(agent=vlevel),
            upstream=upstream,
            theirs_job=str(submit_job(other_agent, {"urls": ["https://shop.test/a"]}).pk),
            theirs_approval=approval.pk,
            theirs_session=str(chat.pk),
        )


Work = Callable[[ClientSession, Fleet], Awaitable[Any]]


@dataclass(frozen=True)
class Refusal:
    """One refused request: what it does, and the ``<method> <name>`` its audit row names."""

    name: str
    work: Work
    target: Callable[[Fleet], str]


def tool(name: str, arguments: Callable[[Fleet], dict[str, Any]], **meta: Callable[[Fleet], Any]) -> Work:
    async def work(session: ClientSession, fleet: Fleet) -> Any:
        sent_meta = cast(RequestParamsMeta, {key: value(fleet) for key, value in meta.items()}) if meta else None
        result = await session.call_tool(name, arguments(fleet), meta=sent_meta)
        assert result.is_error, result.content
        content = result.content[0]
        assert isinstance(content, TextContent), content
        return json.loads(content.text)

    return work


def twice(name: str, arguments: dict[str, Any]) -> Work:
    """The second of two calls, past a limit of one."""

    async def work(session: ClientSession, fleet: Fleet) -> Any:
        first = await session.call_tool(name, arguments)
        assert not first.is_error, first.content
        return await tool(name, lambda _: arguments)(session, fleet)

    return work


def protocol_error(request: Callable[[ClientSession, Fleet], Awaitable[Any]]) -> Work:
    async def work(session: ClientSession, fleet: Fleet) -> Any:
        with pytest.raises(MCPError):
            await request(session, fleet)

    return work


def named(text: str) -> Callable[[Fleet], str]:
    return lambda _: text


CASES = [
    Refusal(
        "a platform tool that does not exist",
        tool("delete_everything", lambda _: {}),
        named("tools/call delete_everything"),
    ),
    Refusal(
        "an upstream tool the manifest does not grant",
        tool("mcp__supabase__wipe", lambda _: {"all": True}),
        named("tools/call mcp__supabase__wipe"),
    ),
    Refusal(
        "a destructive upstream tool under a read grant",
        tool("mcp__supabase__drop_table", lambda _: {"name": "pages"}),
        named("tools/call mcp__supabase__drop_table"),
    ),
    Refusal(
        "an upstream tool past its rate limit",
        twice("mcp__supabase__slow_report", {"seconds": 0}),
        named("tools/call mcp__supabase__slow_report"),
    ),
    Refusal(
        "an upstream call filed under another agent's job",
        tool("mcp__supabase__slow_report", lambda _: {"seconds": 0}, jobId=lambda fleet: fleet.theirs_job),
        named("tools/call mcp__supabase__slow_report"),
    ),
    Refusal(
        "a lease of another agent's job",
        tool("lease_job", lambda fleet: {"jobId": fleet.theirs_job}),
        named("tools/call lease_job"),
    ),
    Refusal(
        "another agent's approval",
        tool("get_approval", lambda fleet: {"id": fleet.theirs_approval}),
        named("tools/call get_approval"),
    ),
    Refusal(
        "a resource that does not exist",
        protocol_error(lambda session, _: session.read_resource("governance://secrets")),
        named("resources/read governance://secrets"),
    ),
    Refusal(
        "another agent's session prompt",
        protocol_error(
            lambda session, fleet: session.get_prompt("session_level2", {"sessionId": fleet.theirs_session})
        ),
        named("prompts/get session_level2"),
    ),
    Refusal(
        "a prompt that does not exist",
        protocol_error(lambda session, fleet: session.get_prompt("system_secrets", {"sessionId": "x"})),
        named("prompts/get system_secrets"),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_each_mcp_refusal_of_an_agent_key_is_audited_once(fleet, case):
    async def work(session: ClientSession) -> Any:
        return await case.work(session, fleet)

    since = last_audit_id()
    mcp_session(fleet.url, fleet.key, work)

    refusals = refusals_since(since)
    assert len(refusals) == 1, [(r.target_id, r.data) for r in refusals]
    (refusal,) = refusals
    assert refusal.actor == "agent:agent.seo.vlevel"
    assert refusal.target_id == case.target(fleet)
    assert refusal.data["transport"] == "mcp"
    assert fleet.upstream.calls in ([], [("slow_report", {"seconds": 0})])


def test_an_operator_key_refused_an_upstream_tool_is_audited_by_name(fleet, admin_operator):
    async def work(session: ClientSession) -> Any:
        return await tool("mcp__supabase__drop_table", lambda _: {"name": "pages"})(session, fleet)

    since = last_audit_id()
    mcp_session(fleet.url, issue_key(user=admin_operator), work)

    (refusal,) = refusals_since(since)
    assert refusal.actor == f"user:{admin_operator.username}"
    assert refusal.target_id == "tools/call mcp__supabase__drop_table"
    assert fleet.upstream.calls == []


def test_what_the_gateway_lets_through_or_holds_for_a_reviewer_is_no_refusal(fleet):
    async def work(session: ClientSession) -> Any:
        listed = await session.list_tools()
        called = await session.call_tool("mcp__supabase__slow_report", {"seconds": 0})
        approval = await session.call_tool("request_approval", {"title": "deploy"})
        return listed, called, approval

    since = last_audit_id()
    listed, called, approval = mcp_session(fleet.url, fleet.key, work)

    assert "mcp__supabase__slow_report" in {t.name for t in listed.tools}
    assert not called.is_error, called.content
    assert not approval.is_error, approval.content
    assert refusals_since(since) == []


def test_a_revoked_key_turned_away_from_mcp_is_audited_with_whose_key_it_was(live_server, db):
    vlevel = load_manifest(manifest_text("agent.seo.vlevel"), actor=SYSTEM)[0].agent
    row, key = issue_api_key(actor=SYSTEM, name="revoked", agent=vlevel)
    revoke_api_key(row, actor=SYSTEM)
    since = last_audit_id()

    response = httpx2.post(
        f"{live_server.url}/mcp",
        headers={"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"},
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        timeout=30,
    )

    assert response.status_code == 401
    (refusal,) = refusals_since(since)
    assert refusal.actor == f"agent.seo.vlevel (key {row.prefix})"
    assert (refusal.target_id, refusal.data["transport"], refusal.data["key_revoked"]) == ("POST /mcp", "mcp", True)
