"""Issue 34, point 4: an action on a tool the agent's manifest does not grant is refused before
review and never handed out. Only a manifest grants a tool, so no reviewer is asked to: the whole
answer goes back to the model as a FORMAT_ERROR naming the tool, the session goes on as after a
format error (round trips and limits included), and the refusal is in the audit trail. CHAT,
AUTOMATION and hosted automations alike; real PostgreSQL, the API as an agent drives it."""

from __future__ import annotations

import json

import pytest

from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM
from governance.reviews.models import ReviewItem
from sessions import automations, hosted, profiles, scheduler
from sessions.models import AISession, Automation, SessionMessage
from tests.support.api import Api
from tests.support.manifests import load

pytestmark = pytest.mark.django_db

GRANTED = {"type": "mcp__chrome-devtools__take_snapshot", "params": {"url": "https://shop.example.com"}}
UNGRANTED = {"type": "mcp__shell__exec", "params": {"cmd": "rm -rf /srv"}}  # in no manifest of the fleet
UPSERT = {"type": "mcp__vector__upsert", "params": {"id": "doc-1"}}  # the indexer's tool that needs no approval


def answer(api: Api, session_id: str, **message: object) -> dict:
    body = {"type": "AIResponseReceived", "payload": {"content": json.dumps(message)}}
    response = api.post(f"/sessions/{session_id}/events", body)
    assert response.status_code == 200, response.json()
    return response.json()


def chat(api: Api) -> str:
    session_id = api.post("/sessions", {"type": "CHAT", "name": "Clean up"}).json()["sessionId"]
    api.post(f"/sessions/{session_id}/events", {"type": "UserMessageSent", "payload": {"text": "free some disk"}})
    return session_id


def automation_run(api: Api) -> str:
    body = {"name": "Nightly clean-up", "messages": [{"text": "Free some disk"}], "trigger": "MANUAL"}
    automation = api.post("/automations", body).json()["id"]
    response = api.post(f"/automations/{automation}/execute")
    assert response.status_code == 202
    return response.json()["sessionId"]


def format_errors(session_id: str) -> list[str]:
    found = SessionMessage.objects.filter(session__pk=session_id, system_type="FORMAT_ERROR").order_by("seq")
    return [(message.system_message or {})["summary"] for message in found]


def assert_refused(session_id: str, body: dict, tool: str = "mcp__shell__exec") -> None:
    """Back to the model, told which tool; no reviewer asked, nothing to execute, anywhere."""
    assert body["state"]["phase"] == "CALLING_AI"
    assert body["next"]["action"] == "call_ai"
    assert not ReviewItem.objects.exists()
    [summary] = format_errors(session_id)
    assert f"{tool} is not granted by the agent's manifest" in summary
    [refused] = SessionMessage.objects.filter(session__pk=session_id, sender="AI")
    stored = refused.ai_message or {}
    assert "actionCommands" not in stored  # kept only as the format error's fallback
    assert stored["preText"].startswith("ai_response_invalid_format")


def test_a_chat_action_on_an_ungranted_tool_is_a_format_error_and_no_review(vlevel_api):
    session_id = chat(vlevel_api)

    body = answer(vlevel_api, session_id, preText="Cleaning.", actionCommands=[UNGRANTED])

    assert_refused(session_id, body)
    assert body["state"]["totalRoundtrips"] == 1  # the round trip counts, as a format error's does
    assert vlevel_api.get(f"/sessions/{session_id}").json()["phase"] == "CALLING_AI"


def test_the_model_reads_the_refusal_in_its_next_prompt(vlevel_api):
    session_id = chat(vlevel_api)
    answer(vlevel_api, session_id, preText="Cleaning.", actionCommands=[UNGRANTED])

    prompt = vlevel_api.get(f"/sessions/{session_id}/prompt").json()

    system = [m for m in prompt["sessionMessages"] if m["sender"] == "SYSTEM"]
    assert "mcp__shell__exec is not granted" in json.dumps(system)


def test_one_ungranted_tool_refuses_the_granted_actions_beside_it(vlevel_api):
    session_id = chat(vlevel_api)

    body = answer(vlevel_api, session_id, preText="Snapshot, then clean.", actionCommands=[GRANTED, UNGRANTED])

    assert_refused(session_id, body)


def test_a_tool_id_parameter_cannot_hide_an_ungranted_tool_behind_a_granted_type(vlevel_api):
    session_id = chat(vlevel_api)
    disguised = {"type": GRANTED["type"], "params": {"tool_id": "mcp__shell__exec", "cmd": "rm -rf /srv"}}

    body = answer(vlevel_api, session_id, preText="Snapshot.", actionCommands=[disguised])

    assert_refused(session_id, body)


def test_the_refusal_is_audited_with_the_tools_and_who_sent_the_answer(vlevel_api):
    session_id = chat(vlevel_api)

    answer(vlevel_api, session_id, preText="Cleaning.", actionCommands=[UNGRANTED, UNGRANTED])

    audit = AuditEvent.objects.get(action="session.actions_refused")
    assert (audit.actor, audit.target_id) == ("system", session_id)
    assert audit.data["tools"] == ["mcp__shell__exec"]
    assert audit.data["sent_by"] == "agent:agent.seo.vlevel"
    assert audit.data["ai_message"] == str(SessionMessage.objects.get(sender="AI").pk)


def test_the_corrected_answer_on_a_granted_tool_goes_to_review_as_before(vlevel_api):
    session_id = chat(vlevel_api)
    answer(vlevel_api, session_id, preText="Cleaning.", actionCommands=[UNGRANTED])

    body = answer(vlevel_api, session_id, preText="A snapshot instead.", actionCommands=[GRANTED])

    assert body["state"]["phase"] == "WAITING_VALIDATION"
    item = ReviewItem.objects.get()
    assert item.payload["actionCommands"][0]["type"] == GRANTED["type"]
    assert item.payload["validationContext"]["warnings"] == [
        "mcp__chrome-devtools__take_snapshot has execute permission: it changes things"
    ]


def test_an_automation_action_on_an_ungranted_tool_is_refused_and_the_run_goes_on(vlevel_api):
    session_id = automation_run(vlevel_api)

    body = answer(vlevel_api, session_id, preText="Cleaning.", actionCommands=[UNGRANTED])

    assert_refused(session_id, body)
    assert AISession.objects.get(pk=session_id).is_active


def test_refusals_count_against_the_automation_round_trip_limit(vlevel_api, settings):
    settings.SESSION_AUTOMATION_MAX_ROUNDTRIPS = 2
    session_id = automation_run(vlevel_api)
    answer(vlevel_api, session_id, preText="Cleaning.", actionCommands=[UNGRANTED])

    body = answer(vlevel_api, session_id, preText="Cleaning again.", actionCommands=[UNGRANTED])

    assert body["state"]["phase"] == "AWAITING_SESSION_CLOSURE"
    assert len(format_errors(session_id)) == 2
    assert SessionMessage.objects.filter(session_id=session_id, system_type="LIMIT_REACHED").exists()
    assert not ReviewItem.objects.exists()


def hosted_run(script: list[dict]) -> AISession:
    indexer = load("agent.rag.indexer")
    responses = [json.dumps(message) for message in script]
    profiles.create_profile(
        actor=SYSTEM, name="script", provider="scripted", options={"responses": responses, "simulate_actions": True}
    )
    automation = automations.create_automation(
        indexer,
        actor=SYSTEM,
        name="reindex",
        trigger=Automation.Trigger.MANUAL,
        messages=[{"text": "go"}],
        profile_name="script",
    )
    _, session = scheduler.execute_automation(automation, actor=SYSTEM)
    return session


def test_a_hosted_model_naming_an_ungranted_tool_is_refused_then_its_correction_runs():
    session = hosted_run(
        [
            {"preText": "Cleaning.", "actionCommands": [UNGRANTED]},
            {"preText": "Upserting instead.", "actionCommands": [UPSERT]},
        ]
    )

    assert hosted.call_provider(str(session.pk), actor=SYSTEM) == "answered"
    session.refresh_from_db()
    assert session.phase == "CALLING_AI"
    assert not ReviewItem.objects.exists()
    assert hosted.simulate_actions(str(session.pk), actor=SYSTEM) == "skipped"  # nothing handed out
    assert "mcp__shell__exec is not granted" in format_errors(str(session.pk))[0]

    assert hosted.call_provider(str(session.pk), actor=SYSTEM) == "answered"
    session.refresh_from_db()
    assert session.phase == "EXECUTING_ACTIONS"
    assert hosted.simulate_actions(str(session.pk), actor=SYSTEM) == "simulated"
    [result] = session.messages.get(system_type="ACTIONS_EXECUTED").system_message["commandResults"]
    assert result["summary"].endswith(UPSERT["type"])


def test_an_approval_of_a_tool_the_manifest_withdrew_meanwhile_is_not_carried_out(client, vlevel_api, reviewer):
    """The item waited; a new manifest version dropped the tool; the reviewer approved anyway."""
    from agents.registry import load_manifest
    from tests.support.keys import issue_key
    from tests.support.manifests import manifest_text

    session_id = chat(vlevel_api)
    answer(vlevel_api, session_id, preText="A snapshot.", actionCommands=[GRANTED])
    item = ReviewItem.objects.get()
    snapshot = "    - tool_id: mcp__chrome-devtools__take_snapshot\n      permissions: execute\n      rate_limit: 30\n"
    text = manifest_text("agent.seo.vlevel", version="1.1.0")
    without = text.replace(snapshot, "").replace("required: true", "required: false")  # skills need it
    load_manifest(without, actor=SYSTEM)

    decided = Api(client, issue_key(user=reviewer)).post(f"/reviews/{item.pk}/decision", {"decision": "approve"})

    assert decided.status_code == 200, decided.content
    state = vlevel_api.get(f"/sessions/{session_id}").json()
    assert state["phase"] != "EXECUTING_ACTIONS"
    voided = AuditEvent.objects.get(action="session.approval_voided")
    assert voided.data["tools"] == [GRANTED["type"]]
