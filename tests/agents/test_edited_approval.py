"""Edit, then approve (issue 37 point 3): a reviewer approves a tool call with other arguments than
the agent asked for. The call allowed is the edited one, bound to the edited arguments' hash; the
agent is told the arguments changed and how; the decision and its audit row keep both versions and
the reviewer. Through the REST path (the agent makes the call itself), the reviewers' API, and the
MCP gateway (which forwards the edited call to a real upstream, never the original)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from django.test import Client
from django.urls import reverse
from mcp.client.session import ClientSession

from agents.models import ToolCall, ToolGrant
from agents.registry import load_manifest
from gateway.models import GatewayCall, ToolTask, UpstreamServer
from governance.kernel.exceptions import Forbidden
from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM, Principal
from governance.reviews import services as reviews
from governance.reviews.models import ReviewDecision, ReviewItem, payload_hash
from tests.support.api import Api
from tests.support.inbox import decide_in_inbox
from tests.support.keys import issue_key
from tests.support.manifests import manifest_text
from tests.support.mcp import mcp_session
from tests.support.refusals import nothing_written
from tests.support.upstream import Upstream, upstream_server

SNAPSHOT = "/agents/agent.seo.vlevel/tools/mcp__chrome-devtools__take_snapshot/calls"
HOME = {"url": "https://shop.example.com/"}
CHECKOUT = {"url": "https://shop.example.com/checkout"}
SQL = "mcp__supabase__execute_sql"
DROP = {"query": "delete from pages"}
COUNT = {"query": "select count(*) from pages"}
GATED = ("      rate_limit: 100", "      rate_limit: 100\n      requires_approval: true")
HTMX = {"HX-Request": "true"}


def asked(api: Api, arguments: dict[str, Any]) -> int:
    response = api.post(SNAPSHOT, {"arguments": arguments})
    assert response.status_code == 202, response.content
    return response.json()["reviewItemId"]


@pytest.fixture
def inbox(client: Client, reviewer: Any) -> Client:
    """rita, signed in to the inbox."""
    client.force_login(reviewer)
    return client


def approve_edited(inbox: Client, item_id: int, arguments: Any, *, htmx: bool = False, **fields: Any) -> Any:
    """Approve the item as its row's "Approve edited" button does, with ``arguments`` (JSON text
    as typed, or a value), bound to the content the row shows; as htmx sends it, or a plain POST."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, indent=2)
    shown = ReviewItem.objects.get(pk=item_id).content_hash
    form = {"decision": "approve", "shown": shown, "arguments": text, **fields}
    return inbox.post(reverse("reviews:inbox-decide", args=[item_id]), form, headers=HTMX if htmx else None)


# -- the REST path: the agent makes the call itself ------------------------------------------------


@pytest.mark.django_db
def test_only_the_edited_call_is_allowed_and_the_agent_asking_again_is_told_what_changed(vlevel_api, inbox):
    item_id = asked(vlevel_api, HOME)
    assert approve_edited(inbox, item_id, CHECKOUT).status_code == 200

    told = vlevel_api.post(SNAPSHOT, {"arguments": HOME})

    assert told.status_code == 409  # the arguments asked for are not the ones approved
    edit = told.json()["argumentsEdited"]
    assert edit["arguments"] == CHECKOUT
    assert edit["argumentsHash"] == payload_hash(CHECKOUT)
    assert edit["requestedArgumentsHash"] == payload_hash(HOME)
    assert edit["editedBy"] == "rita"
    assert edit["changes"] == [{"op": "replace", "path": "/url", "before": HOME["url"], "after": CHECKOUT["url"]}]
    assert "/url" in told.json()["detail"]
    assert not ToolCall.objects.exists()
    assert ReviewItem.objects.count() == 1  # no second approval asked for

    called = vlevel_api.post(SNAPSHOT, {"arguments": CHECKOUT})

    assert called.status_code == 201
    assert called.json()["argumentsEdited"]["arguments"] == CHECKOUT
    grant = ToolGrant.objects.get(review_item_id=item_id)
    assert (grant.status, grant.arguments, grant.arguments_hash) == ("used", CHECKOUT, payload_hash(CHECKOUT))
    assert grant.requested_hash == payload_hash(HOME)
    assert grant.tool_call_id == called.json()["id"]
    # Used once: the edited call and the original each ask a reviewer again.
    assert vlevel_api.post(SNAPSHOT, {"arguments": CHECKOUT}).status_code == 202
    assert vlevel_api.post(SNAPSHOT, {"arguments": HOME}).status_code == 202
    assert ToolCall.objects.count() == 1


@pytest.mark.django_db
def test_the_decision_and_its_audit_row_keep_both_versions_and_the_reviewer(vlevel_api, inbox, reviewer):
    item_id = asked(vlevel_api, HOME)
    item = ReviewItem.objects.get(pk=item_id)
    approve_edited(inbox, item_id, CHECKOUT, comment="the checkout, not the home page")

    decision = ReviewDecision.objects.select_related("user").get(item_id=item_id)
    audit = AuditEvent.objects.get(action="review.approve", target_id=str(item_id))

    assert decision.user == reviewer
    assert decision.payload_hash == item.content_hash  # bound to what was shown
    assert decision.amended["arguments"] == CHECKOUT
    assert decision.amended["argumentsHash"] == payload_hash(CHECKOUT)
    assert decision.amended_hash == payload_hash(decision.amended)
    assert audit.actor == "user:rita"
    assert audit.data["comment"] == "the checkout, not the home page"
    assert (audit.data["payload_hash"], audit.data["payload"]["arguments"]) == (item.content_hash, HOME)
    assert (audit.data["amended_hash"], audit.data["amended"]["arguments"]) == (decision.amended_hash, CHECKOUT)
    assert ReviewItem.objects.get(pk=item_id).payload == item.payload  # the item keeps what was asked


@pytest.mark.django_db
def test_an_edit_that_changes_nothing_is_a_plain_approval(vlevel_api, inbox):
    item_id = asked(vlevel_api, HOME)
    approve_edited(inbox, item_id, '{\n  "url":   "https://shop.example.com/"\n}')

    decision = ReviewDecision.objects.get(item_id=item_id)
    assert (decision.amended, decision.amended_hash) == (None, "")
    assert vlevel_api.post(SNAPSHOT, {"arguments": HOME}).status_code == 201
    assert vlevel_api.post(SNAPSHOT, {"arguments": HOME}).json()["reviewItemId"] != item_id


@pytest.mark.django_db
def test_the_pending_row_offers_the_editor_and_says_no_schema_is_known(vlevel_api, inbox, viewer):
    item_id = asked(vlevel_api, HOME)

    page = inbox.get(reverse("reviews:item", args=[item_id])).content.decode()

    assert "Edit arguments" in page
    assert 'name="arguments" rows="8"' in page
    assert "&quot;url&quot;: &quot;https://shop.example.com/&quot;" in page  # the pretty JSON, prefilled
    assert "No input schema is known for this tool: any JSON object is accepted." in page
    assert "Approve edited" in page
    inbox.force_login(viewer)  # who may not decide is offered no editor
    assert "Approve edited" not in inbox.get(reverse("reviews:item", args=[item_id])).content.decode()


@pytest.mark.django_db
def test_the_approved_row_shows_the_edited_arguments_and_what_changed(vlevel_api, inbox):
    item_id = asked(vlevel_api, HOME)

    row = approve_edited(inbox, item_id, CHECKOUT, htmx=True).content.decode()

    assert "Approved with edited arguments" in row
    assert "<code>/url</code>" in row
    assert "https://shop.example.com/checkout" in row
    assert "Approve edited" not in row


@pytest.mark.django_db
def test_json_that_is_not_json_is_refused_in_the_row_and_nothing_is_decided(vlevel_api, inbox):
    item_id = asked(vlevel_api, HOME)

    with nothing_written():
        plain = approve_edited(inbox, item_id, '{"url": ')
        row = approve_edited(inbox, item_id, '{"url": ', htmx=True)
        listed = approve_edited(inbox, item_id, '["not", "an", "object"]', htmx=True)

    assert plain.status_code == 400
    assert row.status_code == 200
    html = row.content.decode()
    assert "The edited arguments are not JSON" in html
    assert "{&quot;url&quot;: </textarea>" in html  # what the reviewer typed, kept to be fixed
    assert "The edited arguments are not a JSON object" in listed.content.decode()
    assert ReviewItem.objects.get(pk=item_id).status == "pending"


@pytest.mark.django_db
def test_a_rejection_with_an_edit_in_the_editor_is_a_rejection(vlevel_api, inbox):
    """The page sends the editor's text with every button of the item."""
    item_id = asked(vlevel_api, HOME)

    decide_in_inbox(inbox, item_id, "reject", arguments='{"url": ')

    decision = ReviewDecision.objects.get(item_id=item_id)
    assert (decision.decision, decision.amended) == ("reject", None)


@pytest.mark.django_db
def test_an_agent_cannot_send_edited_arguments_for_its_own_item(vlevel, vlevel_api):
    item_id = asked(vlevel_api, HOME)

    with nothing_written():
        api = vlevel_api.post(f"/reviews/{item_id}/decision", {"decision": "approve", "arguments": CHECKOUT})
        with pytest.raises(Forbidden):
            reviews.decide(item_id, actor=Principal(agent=vlevel), decision="approve", amendment=CHECKOUT)

    assert api.status_code == 403
    assert ReviewItem.objects.get(pk=item_id).status == "pending"
    assert vlevel_api.post(SNAPSHOT, {"arguments": CHECKOUT}).status_code == 202  # nothing approved


# -- the reviewers' REST API ------------------------------------------------------------------------


@pytest.fixture
def reviewer_api(client: Client, reviewer: Any) -> Api:
    return Api(client, issue_key(user=reviewer))


@pytest.mark.django_db
def test_a_reviewer_approves_edited_arguments_through_the_api(vlevel_api, reviewer_api):
    item_id = asked(vlevel_api, HOME)
    shown = ReviewItem.objects.get(pk=item_id).content_hash

    answer = reviewer_api.post(
        f"/reviews/{item_id}/decision", {"decision": "approve", "arguments": CHECKOUT, "payloadHash": shown}
    )

    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert (body["status"], body["payloadHash"]) == ("approved", shown)
    assert body["amended"]["arguments"] == CHECKOUT
    assert body["amendedHash"] == payload_hash(body["amended"])
    assert vlevel_api.post(SNAPSHOT, {"arguments": CHECKOUT}).status_code == 201


@pytest.mark.django_db
def test_the_api_refuses_edited_arguments_that_are_no_approval_or_on_a_kind_without_them(
    vlevel, vlevel_api, reviewer_api
):
    item_id = asked(vlevel_api, HOME)
    question = reviews.open_item(actor=SYSTEM, kind="test.notice", title="A notice", payload={"text": "x"})

    with nothing_written():
        rejected = reviewer_api.post(f"/reviews/{item_id}/decision", {"decision": "reject", "arguments": CHECKOUT})
        listed = reviewer_api.post(f"/reviews/{item_id}/decision", {"decision": "approve", "arguments": [1]})
        other_kind = reviewer_api.post(f"/reviews/{question.pk}/decision", {"decision": "approve", "arguments": {}})

    assert rejected.status_code == 422
    assert listed.status_code == 422
    assert other_kind.status_code == 422
    assert other_kind.json()["errors"][0]["loc"] == ["body", "arguments"]
    assert "takes no edited arguments" in other_kind.json()["detail"]


@pytest.mark.django_db
def test_an_edit_into_arguments_the_agent_already_waits_for_is_refused(vlevel_api, inbox):
    """Two open grants for the same call cannot be: the reviewer decides the agent's own request."""
    item_id = asked(vlevel_api, HOME)
    waiting = asked(vlevel_api, CHECKOUT)

    with nothing_written():
        row = approve_edited(inbox, item_id, CHECKOUT, htmx=True)

    assert f"item #{waiting}" in row.content.decode()
    assert ReviewItem.objects.get(pk=item_id).status == "pending"


# -- the MCP gateway: it forwards the call itself ---------------------------------------------------


@pytest.fixture
def gated(live_server: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Upstream]]:
    """agent.seo.vlevel's key, its manifest granting mcp__supabase__execute_sql with approval, and
    the registered upstream that serves it (whose definition the gateway pins at the first listing)."""
    agent = load_manifest(manifest_text("agent.seo.vlevel").replace(*GATED), actor=SYSTEM)[0].agent
    monkeypatch.setenv("UPSTREAM_TOKEN_SUPABASE", "upstream-secret-token")
    with upstream_server() as upstream:
        UpstreamServer.objects.create(
            name="supabase", url=upstream.url, secret_name="UPSTREAM_TOKEN_SUPABASE", internal=True
        )
        yield issue_key(agent=agent), upstream


def sql(url: str, key: str, arguments: dict[str, Any]) -> Any:
    async def work(session: ClientSession) -> Any:
        return await session.call_tool(SQL, arguments)

    return mcp_session(url, key, work)


def waiting_item(result: Any) -> int:
    body = json.loads(result.content[0].text)
    assert body["refusal"] == "PendingApproval", body
    return body["reviewItemId"]


@pytest.mark.django_db(transaction=True)
def test_the_upstream_receives_the_edited_call_and_the_agent_is_told_how_it_changed(live_server, gated, inbox):
    key, upstream = gated
    item_id = waiting_item(sql(live_server.url, key, DROP))
    assert "inputSchema" in ReviewItem.objects.get(pk=item_id).payload  # the pinned definition's
    approve_edited(inbox, item_id, COUNT)

    result = sql(live_server.url, key, DROP)  # the agent asks again with what it asked for

    assert not result.is_error, result.content
    assert upstream.calls == [("execute_sql", COUNT)]  # the edited call; the original never
    assert result.content[0].text == "rows for select count(*) from pages"
    note = result.content[-1].text
    assert "A reviewer (rita) changed the arguments" in note
    assert '/query: "delete from pages" -> "select count(*) from pages"' in note
    edit = result.meta["argumentsEdited"]
    assert (edit["arguments"], edit["requestedArgumentsHash"]) == (COUNT, payload_hash(DROP))
    assert ReviewItem.objects.count() == 1  # the retry got the edited call, not a second approval
    logged = GatewayCall.objects.get(outcome="ok")
    assert logged.arguments_hash == payload_hash(COUNT)
    assert ToolGrant.objects.get(review_item_id=item_id).status == "used"
    assert waiting_item(sql(live_server.url, key, DROP)) != item_id  # used once
    assert upstream.calls == [("execute_sql", COUNT)]


@pytest.mark.django_db(transaction=True)
def test_arguments_the_tools_schema_refuses_are_refused_at_their_path_and_nothing_is_written(live_server, gated, inbox):
    key, upstream = gated
    item_id = waiting_item(sql(live_server.url, key, DROP))

    with nothing_written():
        wrong_type = approve_edited(inbox, item_id, {"query": 5})
        missing = approve_edited(inbox, item_id, {"sql": "select 1"}, htmx=True)

    assert wrong_type.status_code == 400
    assert "at /query: 5 is not of type &#x27;string&#x27;" in wrong_type.content.decode()
    assert "at /: &#x27;query&#x27; is a required property" in missing.content.decode()
    assert "Checked against the tool's input schema" in missing.content.decode()
    assert ReviewItem.objects.get(pk=item_id).status == "pending"
    assert waiting_item(sql(live_server.url, key, DROP)) == item_id
    assert upstream.calls == []


@pytest.mark.django_db(transaction=True)
def test_an_mcp_task_forwards_the_edited_call_when_polled(live_server, gated, inbox):
    key, upstream = gated

    def rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
        headers = {
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
            "Authorization": f"Bearer {key}",
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        return httpx2.post(f"{live_server.url}/mcp", json=body, headers=headers, timeout=60).json()["result"]

    task = rpc("tools/call", {"name": SQL, "arguments": DROP, "task": {}})["task"]
    approve_edited(inbox, ToolTask.objects.get().review_item_id, COUNT)

    assert rpc("tasks/get", {"taskId": task["taskId"]})["status"] == "completed"
    result = rpc("tasks/result", {"taskId": task["taskId"]})

    assert upstream.calls == [("execute_sql", COUNT)]
    assert result["_meta"]["argumentsEdited"]["arguments"] == COUNT
    assert "changed the arguments" in result["content"][-1]["text"]
