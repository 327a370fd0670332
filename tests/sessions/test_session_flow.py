"""Sessions through the API, the way an agent drives them: events in, next action out."""

from __future__ import annotations

import json

import pytest

from governance.reviews.models import ReviewItem
from sessions.models import AISession, SessionMessage
from tests.support.api import Api
from tests.support.keys import issue_key


def ai(**message) -> dict:
    return {
        "type": "AIResponseReceived",
        "payload": {"content": json.dumps(message), "tokens": {"input": 10, "output": 5}},
    }


@pytest.fixture
def chat(vlevel_api) -> dict:
    response = vlevel_api.post("/sessions", {"type": "CHAT", "name": "Audit help"})
    assert response.status_code == 201
    return response.json()


def event(api, session: dict, body: dict):
    return api.post(f"/sessions/{session['sessionId']}/events", body)


@pytest.mark.django_db
def test_a_chat_starts_active_and_idle(chat):
    assert chat["phase"] == "IDLE"
    assert chat["isActive"] is True
    assert chat["sessionType"] == "CHAT"
    assert chat["totalRoundtrips"] == 0


@pytest.mark.django_db
def test_a_user_message_asks_the_agent_to_call_its_model(vlevel_api, chat):
    response = event(vlevel_api, chat, {"type": "UserMessageSent", "payload": {"text": "How are my audits doing?"}})

    assert response.status_code == 200
    body = response.json()
    assert body["state"]["phase"] == "CALLING_AI"
    assert body["next"] == {"action": "call_ai", "prompt": f"/api/v1/sessions/{chat['sessionId']}/prompt"}
    prompt = vlevel_api.get(f"/sessions/{chat['sessionId']}/prompt").json()
    assert "AIMessage" in prompt["level1Content"] or "preText" in prompt["level1Content"]
    assert "agent.seo.vlevel" in prompt["level2Content"]
    assert [m["sender"] for m in prompt["sessionMessages"]] == ["USER"]


@pytest.mark.django_db
def test_a_data_query_runs_on_the_server_and_comes_back_to_the_model(vlevel_api, chat):
    event(vlevel_api, chat, {"type": "UserMessageSent", "payload": {"text": "list my jobs"}})

    body = event(vlevel_api, chat, ai(preText="Let me look.", dataCommands=[{"type": "JOBS", "params": {}}])).json()

    assert body["state"]["phase"] == "CALLING_AI"
    assert body["state"]["totalRoundtrips"] == 1
    kinds = [(m.sender, m.system_type) for m in SessionMessage.objects.order_by("seq")]
    assert kinds == [("USER", ""), ("AI", ""), ("SYSTEM", "DATA_ADDED")]


@pytest.mark.django_db
def test_plain_text_ends_the_chat_round(vlevel_api, chat):
    event(vlevel_api, chat, {"type": "UserMessageSent", "payload": {"text": "hi"}})
    body = event(vlevel_api, chat, ai(preText="Hello!")).json()
    assert body["state"]["phase"] == "IDLE"
    assert body["next"] == {"action": "wait_for_user"}


@pytest.mark.django_db
def test_an_unparseable_answer_is_a_format_error_and_a_retry(vlevel_api, chat):
    event(vlevel_api, chat, {"type": "UserMessageSent", "payload": {"text": "hi"}})

    body = event(vlevel_api, chat, {"type": "AIResponseReceived", "payload": {"content": "Sure! Here you go"}}).json()

    assert body["state"]["phase"] == "CALLING_AI"
    ai_message = SessionMessage.objects.get(sender="AI")
    assert ai_message.ai_message["preText"].startswith("ai_response_invalid_format")
    assert SessionMessage.objects.filter(system_type="FORMAT_ERROR").exists()


@pytest.mark.django_db
def test_an_event_the_phase_does_not_allow_is_409_naming_both(vlevel_api, chat):
    response = event(vlevel_api, chat, {"type": "ActionsExecuted", "payload": {}})

    assert response.status_code == 409
    assert response.json()["phase"] == "IDLE"
    assert response.json()["event"] == "ActionsExecuted"


@pytest.mark.django_db
def test_an_unknown_event_is_422(vlevel_api, chat):
    response = event(vlevel_api, chat, {"type": "Teleport", "payload": {}})
    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["body", "type"]


@pytest.mark.django_db
def test_an_action_on_an_approval_tool_waits_for_a_reviewer(vlevel_api, chat):
    event(vlevel_api, chat, {"type": "UserMessageSent", "payload": {"text": "snapshot the home page"}})
    action = {"type": "mcp__chrome-devtools__take_snapshot", "params": {"url": "https://shop.example.com"}}

    body = event(vlevel_api, chat, ai(preText="I will take a snapshot.", actionCommands=[action])).json()

    assert body["state"]["phase"] == "WAITING_VALIDATION"
    item = ReviewItem.objects.get()
    assert body["next"] == {"action": "wait_for_validation", "reviewItemId": item.pk}
    assert item.kind == "session_validation"
    assert item.payload["validationContext"]["actions"] == [
        "Run mcp__chrome-devtools__take_snapshot (execute) with url='https://shop.example.com'"
    ]
    assert SessionMessage.objects.filter(fallback_kind="VALIDATION_CANCELLED", removed_at__isnull=True).exists()


@pytest.mark.django_db
def test_an_approval_runs_the_actions_and_removes_the_fallback(vlevel_api, chat, client, reviewer):
    event(vlevel_api, chat, {"type": "UserMessageSent", "payload": {"text": "snapshot"}})
    action = {"type": "mcp__chrome-devtools__take_snapshot", "params": {}}
    event(vlevel_api, chat, ai(preText="Snapshot?", actionCommands=[action], postText="Done."))
    item = ReviewItem.objects.get()

    Api(client, issue_key(user=reviewer)).post(f"/reviews/{item.pk}/decision", {"decision": "approve"})

    session = AISession.objects.get()
    assert session.phase == "EXECUTING_ACTIONS"
    assert not SessionMessage.objects.filter(fallback_kind="VALIDATION_CANCELLED", removed_at__isnull=True).exists()
    results = [
        {
            "commandId": json.loads(SessionMessage.objects.get(sender="AI").ai_message_json)
            and SessionMessage.objects.get(sender="AI").ai_message["actionCommands"][0]["id"],
            "status": "SUCCESS",
        }
    ]
    body = event(vlevel_api, chat, {"type": "ActionsExecuted", "payload": {"results": results}}).json()
    assert body["state"]["phase"] == "IDLE"
    post = SessionMessage.objects.filter(sender="AI", text_content="Done.").get()
    assert post.exclude_from_prompt is True
    assert SessionMessage.objects.filter(system_type="ACTIONS_EXECUTED", fallback_kind="").exists()


@pytest.mark.django_db
def test_another_agent_cannot_drive_the_session(other_agent_api, chat):
    assert event(other_agent_api, chat, {"type": "UserMessageSent", "payload": {"text": "x"}}).status_code == 403
    assert other_agent_api.get(f"/sessions/{chat['sessionId']}").status_code == 404


@pytest.mark.django_db
def test_stop_cancels(vlevel_api, chat):
    body = vlevel_api.post(f"/sessions/{chat['sessionId']}/stop").json()
    assert body["endReason"] == "CANCELLED"
    assert body["isActive"] is False
    assert vlevel_api.get("/sessions/next").status_code == 204
