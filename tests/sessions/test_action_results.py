"""Exactly-once actions: each action command has a stable id, its result is recorded once, a
failure is never reported as a success, and a session resumed mid-execution asks what became of
its actions instead of handing them out again."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from django.db import IntegrityError, transaction

from sessions import scheduler
from sessions.effects import action_id
from sessions.models import ActionResult, AISession, Automation, SessionMessage
from sessions.processor import next_action

ACTION = {"type": "mcp__supabase__execute_sql", "params": {"query": "select 1"}}


def ai(**message) -> dict:
    return {"type": "AIResponseReceived", "payload": {"content": json.dumps(message), "tokens": {"input": 1}}}


def post(api, session_id: str, body: dict):
    return api.post(f"/sessions/{session_id}/events", body)


@pytest.fixture
def automation(vlevel_api) -> Automation:
    body = {"name": "Publisher", "messages": [{"text": "Publish today's posts"}], "trigger": "MANUAL"}
    response = vlevel_api.post("/automations", body)
    assert response.status_code == 201
    return Automation.objects.get(pk=response.json()["id"])


def executing(api, automation: Automation, actions: list[dict]) -> tuple[str, list[str]]:
    """An agent-driven automation resting in EXECUTING_ACTIONS with these actions."""
    session_id = api.post(f"/automations/{automation.pk}/execute").json()["sessionId"]
    body = post(api, session_id, ai(preText="Publishing.", actionCommands=actions)).json()
    assert body["next"]["action"] == "execute_actions", body
    return session_id, [command["id"] for command in body["next"]["commands"]]


@pytest.mark.django_db
def test_each_action_gets_a_stable_id_from_its_message_even_when_two_are_identical(vlevel_api, automation):
    session_id, ids = executing(vlevel_api, automation, [ACTION, ACTION])

    message = SessionMessage.objects.get(session_id=session_id, sender="AI")
    assert ids == [action_id(message, 1), action_id(message, 2)]
    assert len(set(ids)) == 2
    assert [c["id"] for c in message.ai_message["actionCommands"]] == ids  # what the prompt and reviewers see


@pytest.mark.django_db
def test_a_result_posted_twice_is_recorded_once(vlevel_api, automation):
    session_id, [command_id] = executing(vlevel_api, automation, [ACTION])
    result = {"commandId": command_id, "status": "SUCCESS", "summary": "published"}

    first = post(vlevel_api, session_id, {"type": "ActionsExecuted", "payload": {"results": [result, result]}})
    again = post(vlevel_api, session_id, {"type": "ActionsExecuted", "payload": {"results": [result]}})

    assert first.status_code == 200
    assert first.json()["state"]["phase"] == "CALLING_AI"
    assert again.status_code == 409
    assert list(ActionResult.objects.values_list("command_id", "status")) == [(command_id, "SUCCESS")]


@pytest.mark.django_db
def test_the_database_refuses_a_second_result_for_one_command(vlevel_api, automation):
    session_id, [command_id] = executing(vlevel_api, automation, [ACTION])
    session = AISession.objects.get(pk=session_id)
    ActionResult.objects.create(
        session=session, command_id=command_id, status="SUCCESS", result={}, recorded_at=session.created_at
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        ActionResult.objects.create(
            session=session, command_id=command_id, status="FAILED", result={}, recorded_at=session.created_at
        )


@pytest.mark.django_db
def test_all_success_cannot_override_a_failed_result(vlevel_api, automation):
    session_id, [ok, broken] = executing(
        vlevel_api, automation, [ACTION, {"type": "mcp__supabase__execute_sql", "params": {}}]
    )
    results = [{"commandId": ok, "status": "SUCCESS"}, {"commandId": broken, "status": "FAILED", "error": "no slug"}]

    body = post(
        vlevel_api, session_id, {"type": "ActionsExecuted", "payload": {"results": results, "allSuccess": True}}
    )

    assert body.status_code == 200
    assert body.json()["state"]["phase"] != "IDLE"
    assert AISession.objects.get(pk=session_id).messages.filter(system_type="ACTIONS_EXECUTED").count() == 1
    assert dict(ActionResult.objects.values_list("command_id", "status")) == {ok: "SUCCESS", broken: "FAILED"}
    assert SessionMessage.objects.filter(session_id=session_id, sender="AI").count() == 1
    # The failure path: the model is told, through RETRYING_AFTER_ACTION_FAILURE, and asked again.
    assert AISession.objects.get(pk=session_id).phase == "CALLING_AI"


@pytest.mark.django_db
def test_an_empty_report_is_not_a_success(vlevel_api):
    chat = vlevel_api.post("/sessions", {"type": "CHAT", "name": "c"}).json()["sessionId"]
    post(vlevel_api, chat, {"type": "UserMessageSent", "payload": {"text": "publish"}})
    post(vlevel_api, chat, ai(preText="Publishing.", actionCommands=[ACTION], postText="Done."))

    body = post(vlevel_api, chat, {"type": "ActionsExecuted", "payload": {"results": [], "allSuccess": True}}).json()

    # A success would end the chat round in IDLE with the postText; a failure goes back to the model.
    assert body["state"]["phase"] == "CALLING_AI"
    assert not SessionMessage.objects.filter(session_id=chat, text_content="Done.").exists()
    assert ActionResult.objects.get().status == "FAILED"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("payload", "loc"),
    [
        ({"content": "{}", "tokens": "lots"}, ["body", "payload", "tokens"]),
        ({"content": "{}", "tokens": {"input": -1}}, ["body", "payload", "tokens", "input"]),
        ({"content": 42}, ["body", "payload", "content"]),
    ],
)
def test_a_malformed_ai_response_payload_is_422_with_its_path(vlevel_api, payload, loc):
    chat = vlevel_api.post("/sessions", {"type": "CHAT", "name": "c"}).json()["sessionId"]
    post(vlevel_api, chat, {"type": "UserMessageSent", "payload": {"text": "hi"}})

    response = post(vlevel_api, chat, {"type": "AIResponseReceived", "payload": payload})

    assert response.status_code == 422
    assert loc in [error["loc"] for error in response.json()["errors"]]
    assert AISession.objects.get(pk=chat).phase == "CALLING_AI"


@pytest.mark.django_db
def test_results_that_are_not_a_list_are_422_with_their_path(vlevel_api, automation):
    session_id, _ = executing(vlevel_api, automation, [ACTION])

    response = post(vlevel_api, session_id, {"type": "ActionsExecuted", "payload": {"results": "all good"}})

    assert response.status_code == 422
    assert ["body", "payload", "results"] in [error["loc"] for error in response.json()["errors"]]
    assert not ActionResult.objects.exists()


class Agent:
    """An agent that runs each action at most once, by id, and remembers what happened."""

    def __init__(self) -> None:
        self.runs: Counter[str] = Counter()
        self.outcomes: dict[str, dict] = {}

    def execute(self, command_id: str) -> dict:
        if command_id not in self.outcomes:
            self.runs[command_id] += 1
            self.outcomes[command_id] = {"commandId": command_id, "status": "SUCCESS", "summary": "published"}
        return self.outcomes[command_id]


@pytest.mark.django_db
def test_suspended_mid_execution_an_automation_resumes_by_asking_for_outcomes(vlevel_api, automation):
    agent = Agent()
    session_id, ids = executing(
        vlevel_api, automation, [ACTION, ACTION, {"type": "mcp__supabase__execute_sql", "params": {"n": 3}}]
    )
    agent.execute(ids[0])  # the agent is half-way through when a chat pre-empts the automation

    chat = vlevel_api.post("/sessions", {"type": "CHAT", "name": "urgent"}).json()["sessionId"]
    assert AISession.objects.get(pk=session_id).end_reason == "SUSPENDED"
    refused = post(
        vlevel_api, session_id, {"type": "ActionsExecuted", "payload": {"results": [agent.outcomes[ids[0]]]}}
    )
    assert refused.status_code == 409  # a suspended session takes no report; it asks when it resumes
    vlevel_api.post(f"/sessions/{chat}/stop")
    scheduler.tick()

    # The agent finds its session again (GET /sessions/next): the waiting context says what to do.
    nxt = vlevel_api.get("/sessions/next").json()
    assert (nxt["sessionId"], nxt["phase"]) == (session_id, "EXECUTING_ACTIONS")
    assert nxt["waitingContext"] == {"type": "ActionOutcomes", "commandIds": ids}
    asked = next_action(AISession.objects.get(pk=session_id))
    assert asked == {"action": "report_action_outcomes", "commandIds": ids}  # never `execute_actions` again
    results = [agent.execute(command_id) for command_id in asked["commandIds"]]
    done = post(vlevel_api, session_id, {"type": "ActionsExecuted", "payload": {"results": results + results[:1]}})

    assert done.status_code == 200
    assert done.json()["state"]["phase"] == "CALLING_AI"
    assert agent.runs == Counter(dict.fromkeys(ids, 1))  # each executed exactly once
    assert Counter(ActionResult.objects.values_list("command_id", flat=True)) == Counter(dict.fromkeys(ids, 1))
    reported = AISession.objects.get(pk=session_id).messages.get(system_type="ACTIONS_EXECUTED").system_message
    assert [r["commandId"] for r in reported["commandResults"]] == ids
