"""Every way an agent asks a human counts against one pending limit (issue 37 point 7): approval-
gated tool calls (REST and MCP), approval requests (REST and MCP), a session's action approvals
and questions, whoever opens them (a hosted session's answer too). Past AGENT_MAX_PENDING_APPROVALS,
or the manifest's ``quotas.pending_approvals``, the agent gets 429 with Retry-After (the MCP tool
error ``RateLimited`` with ``retryAfter``), and nothing is opened: no item, no grant, no message."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from mcp.client.session import ClientSession

from agents import approvals, tools
from agents.manifest import read_text
from agents.models import Agent, ToolCall, ToolGrant
from agents.registry import load_manifest
from gateway.models import GatewayCall, UpstreamServer
from governance.kernel.exceptions import RateLimited
from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM, Principal
from governance.reviews import services as reviews
from governance.reviews.models import ReviewItem
from sessions import hosted
from sessions.models import AISession, ProviderCall
from tests.support.api import Api
from tests.support.concurrency import at_once
from tests.support.hosted import PROFILE, allow_profiles, hosted_run, local_profile, openai_answer
from tests.support.inbox import decide_in_inbox
from tests.support.keys import issue_key
from tests.support.manifests import load, manifest_text
from tests.support.mcp import mcp_session
from tests.support.refusals import nothing_written
from tests.support.upstream import Upstream, upstream_server

SNAPSHOT_TOOL = "mcp__chrome-devtools__take_snapshot"  # requires approval in seed 001's manifest
SNAPSHOT = f"/agents/agent.seo.vlevel/tools/{SNAPSHOT_TOOL}/calls"
ACTION = {"type": SNAPSHOT_TOOL, "params": {"url": "https://shop.example.com"}}
QUESTION = {"type": "MultipleChoice", "data": {"question": "Which page first?", "options": ["home", "cart"]}}


def page(n: int) -> dict[str, Any]:
    return {"arguments": {"url": f"https://shop.example.com/{n}"}}


def ai(**message: Any) -> dict[str, Any]:
    return {"type": "AIResponseReceived", "payload": {"content": json.dumps(message), "tokens": {"output": 5}}}


def chat_waiting_for_its_model(api: Api, name: str) -> str:
    """A new CHAT of the agent (any other it had is suspended, its requests left open), in CALLING_AI."""
    session_id = api.post("/sessions", {"type": "CHAT", "name": name}).json()["sessionId"]
    api.post(f"/sessions/{session_id}/events", {"type": "UserMessageSent", "payload": {"text": "audit the shop"}})
    return session_id


def pending(agent: Agent) -> int:
    return ReviewItem.objects.filter(agent=agent, status=ReviewItem.Status.PENDING).count()


def opened_rows() -> int:
    return AuditEvent.objects.filter(action="review.opened").count()


def assert_refused(response: Any, limit: int) -> None:
    assert response.status_code == 429, response.content
    assert int(response["Retry-After"]) > 0
    assert (response.json()["quota"], response.json()["limit"]) == ("pending_approvals", limit)


@pytest.mark.django_db
def test_tool_calls_approval_requests_action_approvals_and_questions_share_one_limit(vlevel, vlevel_api, settings):
    settings.AGENT_MAX_PENDING_APPROVALS = 3
    call = vlevel_api.post(SNAPSHOT, page(1))
    request = vlevel_api.post("/approvals", {"action": "Publish the audit"})
    validating = chat_waiting_for_its_model(vlevel_api, "validation")
    validation = vlevel_api.post(f"/sessions/{validating}/events", ai(preText="Snapshot?", actionCommands=[ACTION]))
    asking = chat_waiting_for_its_model(vlevel_api, "question")
    assert [call.status_code, request.status_code, validation.status_code] == [202, 202, 200]
    assert validation.json()["state"]["phase"] == "WAITING_VALIDATION"
    opened = opened_rows()

    with nothing_written():
        refused = [
            vlevel_api.post(SNAPSHOT, page(2)),
            vlevel_api.post("/approvals", {"action": "Publish again"}),
            vlevel_api.post(f"/sessions/{asking}/events", ai(preText="One question.", communicationModule=QUESTION)),
            vlevel_api.post(f"/sessions/{asking}/events", ai(preText="Snapshot?", actionCommands=[ACTION])),
        ]

    for response in refused:
        assert_refused(response, 3)
    assert pending(vlevel) == 3
    assert opened_rows() == opened
    session = AISession.objects.get(pk=asking)
    assert session.phase == "CALLING_AI"  # the answer that asked was not taken: the agent reports it again
    assert not session.messages.filter(sender="AI").exists()


@pytest.mark.django_db
def test_asking_again_for_a_call_already_pending_answers_the_same_item_at_the_limit(vlevel_api, settings):
    settings.AGENT_MAX_PENDING_APPROVALS = 1
    first = vlevel_api.post(SNAPSHOT, page(1))

    again = vlevel_api.post(SNAPSHOT, page(1))

    assert again.status_code == 202
    assert again.json() == first.json()
    assert ToolGrant.objects.count() == 1


@pytest.mark.django_db
def test_deciding_one_frees_a_slot(vlevel, vlevel_api, client, reviewer, settings):
    settings.AGENT_MAX_PENDING_APPROVALS = 2
    first = vlevel_api.post(SNAPSHOT, page(1)).json()["reviewItemId"]
    vlevel_api.post("/approvals", {"action": "Publish the audit"})
    assert vlevel_api.post(SNAPSHOT, page(2)).status_code == 429

    client.force_login(reviewer)
    decide_in_inbox(client, first, "reject")

    assert vlevel_api.post(SNAPSHOT, page(2)).status_code == 202
    assert vlevel_api.post("/approvals", {"action": "And this"}).status_code == 429
    assert pending(vlevel) == 2


@pytest.mark.django_db
def test_an_item_past_its_deadline_no_longer_counts(vlevel, vlevel_api, settings):
    """Nobody may decide it any more; the sweep closes it within the minute."""
    settings.AGENT_MAX_PENDING_APPROVALS = 1
    item_id = vlevel_api.post(SNAPSHOT, page(1)).json()["reviewItemId"]
    ReviewItem.objects.filter(pk=item_id).update(expires_at=timezone.now() - timedelta(seconds=1))

    assert vlevel_api.post(SNAPSHOT, page(2)).status_code == 202


@pytest.mark.django_db
def test_the_manifest_overrides_the_setting(vlevel_api, settings):
    settings.AGENT_MAX_PENDING_APPROVALS = 50
    document = read_text(manifest_text("agent.seo.vlevel"))
    load_manifest({**document, "version": "1.1.0", "quotas": {"pending_approvals": 1}}, actor=SYSTEM)

    assert vlevel_api.post("/approvals", {"action": "One"}).status_code == 202
    assert_refused(vlevel_api.post(SNAPSHOT, page(1)), 1)


@pytest.mark.django_db
def test_another_agents_items_and_the_platforms_own_do_not_count(vlevel, vlevel_api, architect, settings):
    settings.AGENT_MAX_PENDING_APPROVALS = 1
    approvals.request_approval(actor=Principal(agent=architect), title="The architect's own")
    reviews.open_item(actor=SYSTEM, kind="escalation", title="Low confidence", agent=vlevel, payload={})

    assert vlevel_api.post(SNAPSHOT, page(1)).status_code == 202
    assert vlevel_api.post(SNAPSHOT, page(2)).status_code == 429
    assert_refused(Api(Client(), issue_key(agent=architect)).post("/approvals", {"action": "Second"}), 1)


@pytest.mark.django_db(transaction=True)
def test_concurrent_askers_never_exceed_the_limit(settings):
    settings.AGENT_MAX_PENDING_APPROVALS = 3
    agent = load("agent.seo.vlevel")
    actor = Principal(agent=agent)
    numbers = itertools.count()

    def ask() -> object:
        n = next(numbers)
        if n % 2:
            return approvals.request_approval(actor=actor, title=f"request {n}")
        return tools.record_call(agent, SNAPSHOT_TOOL, actor=actor, arguments=page(n)["arguments"])

    results, errors = at_once(ask, 10)

    assert len(results) == 3
    assert [type(error) for error in errors] == [RateLimited] * 7, errors
    assert pending(agent) == 3
    assert ToolGrant.objects.count() == sum(isinstance(result, tools.PendingApproval) for result in results)


@pytest.mark.django_db
def test_a_hosted_answer_past_the_limit_is_held_then_applied_without_asking_the_model_again(
    vlevel, vlevel_api, model_server, client, reviewer, settings
):
    """The platform asks for the agent here (SYSTEM drives a hosted automation): the same limit."""
    settings.AGENT_MAX_PENDING_APPROVALS = 1
    local_profile(model_server.url)
    allow_profiles("agent.seo.vlevel", PROFILE)
    model_server.body = openai_answer(json.dumps({"preText": "Snapshot first.", "actionCommands": [ACTION]}))
    session_id = hosted_run(vlevel_api)
    blocking = vlevel_api.post("/approvals", {"action": "Publish the audit"}).json()["reviewItemId"]

    assert hosted.call_provider(session_id, actor=SYSTEM) == "held"

    session = AISession.objects.get(pk=session_id)
    assert (session.phase, session.is_active) == ("CALLING_AI", True)
    assert session.phase_deadline_at is not None  # its deadline hands the turn to a worker again
    assert ProviderCall.objects.get(session_id=session_id).status == "answered"
    assert pending(vlevel) == 1

    client.force_login(reviewer)
    decide_in_inbox(client, blocking, "approve")
    assert hosted.call_provider(session_id, actor=SYSTEM) == "answered"

    assert AISession.objects.get(pk=session_id).phase == "WAITING_VALIDATION"
    assert ReviewItem.objects.get(status="pending").kind == "session_validation"
    assert len(model_server.received) == 1


# Through /mcp, the same budget ------------------------------------------------------------------

SQL = "mcp__supabase__execute_sql"
GATED = ("      rate_limit: 100", "      rate_limit: 100\n      requires_approval: true")


@pytest.fixture
def gated(live_server: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Agent, str, Upstream]]:
    """agent.seo.vlevel with the upstream SQL tool approval-gated, its key, and the upstream."""
    agent = load_manifest(manifest_text("agent.seo.vlevel").replace(*GATED), actor=SYSTEM)[0].agent
    monkeypatch.setenv("UPSTREAM_TOKEN_SUPABASE", "upstream-secret-token")
    with upstream_server() as upstream:
        UpstreamServer.objects.create(
            name="supabase", url=upstream.url, secret_name="UPSTREAM_TOKEN_SUPABASE", internal=True
        )
        yield agent, issue_key(agent=agent), upstream


def answer(result: Any) -> dict[str, Any]:
    return json.loads(result.content[0].text) if result.content else {}


@pytest.mark.django_db(transaction=True)
def test_mcp_tool_calls_and_approval_requests_meet_the_same_limit(live_server, gated, settings):
    settings.AGENT_MAX_PENDING_APPROVALS = 3
    agent, key, upstream = gated
    assert Api(Client(), key).post(SNAPSHOT, page(1)).status_code == 202

    async def ask(session: ClientSession) -> list[Any]:
        return [
            await session.call_tool(SQL, {"query": "select 1"}),
            await session.call_tool("request_approval", {"title": "Publish the audit"}),
            await session.call_tool(SQL, {"query": "select 2"}),
            await session.call_tool("request_approval", {"title": "Publish again"}),
            await session.call_tool(SQL, {"query": "select 1"}),
        ]

    call, request, refused_call, refused_request, again = mcp_session(live_server.url, key, ask)

    assert answer(call)["refusal"] == "PendingApproval"
    assert not request.is_error
    for refused in (refused_call, refused_request):
        assert refused.is_error
        assert answer(refused)["refusal"] == "RateLimited"
        assert answer(refused)["retryAfter"] > 0
        assert (answer(refused)["quota"], answer(refused)["limit"]) == ("pending_approvals", 3)
    assert answer(again) == answer(call)  # the same call, already pending: the same item
    assert pending(agent) == 3
    assert ToolGrant.objects.filter(tool_id=SQL).count() == 1
    assert not ToolCall.objects.filter(tool_id=SQL).exists()
    assert GatewayCall.objects.filter(refusal="RateLimited").count() == 1
    assert upstream.calls == []
    assert_refused(Api(Client(), key).post(SNAPSHOT, page(2)), 3)
