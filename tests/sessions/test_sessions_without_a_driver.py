"""Issue 34, point 5: sessions end or move on without a driver. The watchdog covers waits nobody
has answered yet, a CHAT suspended for a newer one resumes when the slot frees, an agent can end
its session in ERROR, the platform rejects a completion that would drop work, and an AUTOMATION
ignores communication modules (seed 003, sections 5, 6 and 12). Real PostgreSQL, the event
processor and the scheduler tick as the agent and the platform drive them."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from governance.kernel.models import AuditEvent
from governance.reviews.models import ReviewItem
from sessions import scheduler
from sessions.machine import EndReason, Event, Limits, Phase, SessionType, SystemMessageType, transition
from sessions.models import AISession, Automation, SessionMessage
from tests.sessions.machine_states import MODULE, T0, ev, kinds, make_state, messages
from tests.support.api import Api
from tests.support.keys import issue_key

APPROVAL_TOOL = {"type": "mcp__chrome-devtools__take_snapshot", "params": {}}  # requires approval in vlevel's manifest


@pytest.fixture
def automation(vlevel_api) -> Automation:
    body = {"name": "Nightly audit", "messages": [{"text": "Audit yesterday's jobs"}], "trigger": "MANUAL"}
    response = vlevel_api.post("/automations", body)
    assert response.status_code == 201
    return Automation.objects.get(pk=response.json()["id"])


def run(api: Api, automation: Automation) -> str:
    response = api.post(f"/automations/{automation.pk}/execute")
    assert response.status_code == 202
    return response.json()["sessionId"]


def answer(api: Api, session_id: str, message: dict) -> dict:
    body = {"type": "AIResponseReceived", "payload": {"content": json.dumps(message)}}
    response = api.post(f"/sessions/{session_id}/events", body)
    assert response.status_code == 200, response.json()
    return response.json()


def chat(api: Api, name: str) -> str:
    response = api.post("/sessions", {"type": "CHAT", "name": name})
    assert response.status_code == 201, response.json()
    return response.json()["sessionId"]


# --- 1. the watchdog covers waiting phases ---------------------------------------------------------


@pytest.mark.parametrize("phase", [Phase.WAITING_VALIDATION, Phase.WAITING_COMPLETION_CONFIRMATION], ids=str)
def test_a_wait_nobody_interacted_with_counts_from_when_it_began(phase):
    began = T0 - timedelta(minutes=12)
    state = make_state(phase, SessionType.AUTOMATION, last_event_time=began, last_user_interaction_time=None)
    limits_1_minute = Limits(inactivity_timeout=timedelta(minutes=1))

    closing, effects = transition(state, ev(Event.SCHEDULER_HEARTBEAT, T0), limits_1_minute)

    assert (closing.phase, closing.pending_end_reason) == (Phase.AWAITING_SESSION_CLOSURE, EndReason.TIMEOUT)
    assert messages(effects) == [SystemMessageType.SESSION_TIMEOUT]
    fresh = make_state(phase, SessionType.AUTOMATION, last_event_time=T0 - timedelta(seconds=30))
    assert transition(fresh, ev(Event.SCHEDULER_HEARTBEAT, T0), limits_1_minute) == (fresh, [])


@pytest.mark.django_db
def test_an_automation_waiting_for_a_tool_approval_times_out_and_its_question_is_withdrawn(
    vlevel_api, automation, settings
):
    settings.SESSION_INACTIVITY_TIMEOUT_MINUTES = 1
    session_id = run(vlevel_api, automation)
    assert answer(vlevel_api, session_id, {"preText": "snap", "actionCommands": [APPROVAL_TOOL]})["state"]["phase"] == (
        "WAITING_VALIDATION"
    )
    assert AISession.objects.get(pk=session_id).last_user_interaction_time is None
    began = AISession.objects.get(pk=session_id).last_event_time

    assert scheduler.tick(now=began + timedelta(seconds=50))["timeouts"] == 0  # under the minute
    assert scheduler.tick(now=began + timedelta(minutes=12))["timeouts"] == 1

    closing = AISession.objects.get(pk=session_id)
    assert (closing.phase, closing.pending_end_reason) == ("AWAITING_SESSION_CLOSURE", "TIMEOUT")
    assert SessionMessage.objects.filter(session=closing, system_type="SESSION_TIMEOUT").count() == 1
    assert ReviewItem.objects.get().status == "expired"  # nobody is left to receive the answer
    scheduler.tick(now=began + timedelta(minutes=12, seconds=6))
    ended = AISession.objects.get(pk=session_id)
    assert (ended.phase, ended.end_reason, ended.is_active) == ("COMPLETED", "TIMEOUT", False)


# --- 2. a suspended CHAT resumes when its slot frees --------------------------------------------------


@pytest.mark.django_db
def test_a_chat_suspended_for_a_newer_one_resumes_when_the_newer_one_ends(vlevel_api):
    first = chat(vlevel_api, "first")
    vlevel_api.post(f"/sessions/{first}/events", {"type": "UserMessageSent", "payload": {"text": "hi"}})
    second = chat(vlevel_api, "second")
    suspended = AISession.objects.get(pk=first)
    assert (suspended.is_active, suspended.end_reason, suspended.phase) == (False, "SUSPENDED", "CALLING_AI")

    assert vlevel_api.post(f"/sessions/{second}/stop").status_code == 200
    assert scheduler.tick()["started"] == 1

    resumed = AISession.objects.get(pk=first)
    assert (resumed.is_active, resumed.end_reason, resumed.phase) == (True, None, "CALLING_AI")
    assert vlevel_api.get("/sessions/next").json()["sessionId"] == first
    audit = AuditEvent.objects.get(action="session.resumed")
    assert (audit.actor, audit.target_id) == ("system", first)
    assert not resumed.messages.filter(sender="SYSTEM").exists()  # transparent (seed section 6)


@pytest.mark.django_db
def test_suspended_chats_resume_oldest_first_one_at_a_time(vlevel_api):
    oldest = chat(vlevel_api, "oldest")
    middle = chat(vlevel_api, "middle")
    newest = chat(vlevel_api, "newest")

    vlevel_api.post(f"/sessions/{newest}/stop")
    scheduler.tick()
    assert list(AISession.objects.filter(is_active=True).values_list("name", flat=True)) == ["oldest"]
    assert AISession.objects.get(pk=middle).end_reason == "SUSPENDED"

    vlevel_api.post(f"/sessions/{oldest}/stop")
    scheduler.tick()
    assert list(AISession.objects.filter(is_active=True).values_list("name", flat=True)) == ["middle"]
    assert AISession.objects.get(pk=oldest).end_reason == "CANCELLED"  # a stopped chat never comes back


@pytest.mark.django_db
def test_an_interrupted_chat_keeps_its_question_and_a_decision_meanwhile_applies_when_it_resumes(
    vlevel_api, client, reviewer
):
    first = chat(vlevel_api, "first")
    vlevel_api.post(f"/sessions/{first}/events", {"type": "UserMessageSent", "payload": {"text": "snap"}})
    assert answer(vlevel_api, first, {"preText": "ok", "actionCommands": [APPROVAL_TOOL]})["state"]["phase"] == (
        "WAITING_VALIDATION"
    )
    newer = chat(vlevel_api, "newer")
    item = ReviewItem.objects.get()
    assert item.status == "pending"
    Api(client, issue_key(user=reviewer)).post(f"/reviews/{item.pk}/decision", {"decision": "approve"})
    assert AISession.objects.get(pk=first).phase == "WAITING_VALIDATION"  # suspended: untouched

    vlevel_api.post(f"/sessions/{newer}/stop")
    scheduler.tick()

    resumed = AISession.objects.get(pk=first)
    assert (resumed.is_active, resumed.phase) == (True, "EXECUTING_ACTIONS")


@pytest.mark.django_db
def test_suspended_chats_do_not_count_against_the_automation_queue_quota(vlevel_api, automation):
    chat(vlevel_api, "first")
    chat(vlevel_api, "second")
    assert AISession.objects.filter(scheduler.RESUMABLE).count() == 1
    assert AISession.objects.filter(scheduler.QUEUED).count() == 0


# --- 3. an agent ends its session in ERROR; the platform rejects a completion ------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("session_type", ["CHAT", "AUTOMATION"])
def test_the_agent_ends_its_own_session_in_error(vlevel_api, automation, session_type):
    if session_type == "CHAT":
        session_id = chat(vlevel_api, "c")
        vlevel_api.post(f"/sessions/{session_id}/events", {"type": "UserMessageSent", "payload": {"text": "hi"}})
    else:
        session_id = run(vlevel_api, automation)
    body = {"type": "SystemErrorOccurred", "payload": {"summary": "my provider refuses this key"}}

    response = vlevel_api.post(f"/sessions/{session_id}/events", body)

    assert response.status_code == 200, response.json()
    assert response.json()["state"]["phase"] == "AWAITING_SESSION_CLOSURE"
    scheduler.tick(now=timezone.now() + timedelta(seconds=6))
    ended = AISession.objects.get(pk=session_id)
    assert (ended.phase, ended.end_reason, ended.is_active) == ("COMPLETED", "ERROR", False)
    error = SessionMessage.objects.get(session=ended, system_type="NETWORK_ERROR")  # audit-only, out of the prompt
    assert error.system_message["summary"] == "my provider refuses this key"


@pytest.mark.django_db
def test_another_agent_cannot_end_a_session_in_error(vlevel_api, automation, client, architect):
    session_id = run(vlevel_api, automation)
    before = AISession.objects.values().get(pk=session_id)
    intruder = Api(client, issue_key(agent=architect))

    response = intruder.post(f"/sessions/{session_id}/events", {"type": "SystemErrorOccurred", "payload": {}})

    assert response.status_code in (403, 404)
    assert AISession.objects.values().get(pk=session_id) == before
    assert not SessionMessage.objects.filter(session_id=session_id, system_type="NETWORK_ERROR").exists()


@pytest.mark.django_db
def test_the_agent_still_cannot_emit_the_platforms_completion_events(vlevel_api, automation):
    session_id = run(vlevel_api, automation)
    answer(vlevel_api, session_id, {"preText": "done", "completed": True})
    for event in ("CompletionRejected", "CompletionConfirmed"):
        response = vlevel_api.post(f"/sessions/{session_id}/events", {"type": event, "payload": {}})
        assert response.status_code == 403
        assert AISession.objects.get(pk=session_id).phase == "WAITING_COMPLETION_CONFIRMATION"


@pytest.mark.django_db
def test_a_completion_that_still_asks_for_work_is_rejected_by_the_platform(vlevel_api, automation):
    session_id = run(vlevel_api, automation)
    query = {"type": "TOOL_DATA", "params": {"tool": "mood"}}

    body = answer(vlevel_api, session_id, {"preText": "done", "completed": True, "dataCommands": [query]})

    assert body["state"]["phase"] == "CALLING_AI"  # back to the model, not closed
    session = AISession.objects.get(pk=session_id)
    assert (session.timer_at, session.timer_event, session.pending_end_reason) == (None, "", None)
    rejected = SessionMessage.objects.get(session=session, system_type="FORMAT_ERROR")
    assert "dataCommands" in rejected.system_message["summary"]
    assert scheduler.tick(now=timezone.now() + timedelta(seconds=6))["timers"] == 0
    assert AISession.objects.get(pk=session_id).is_active


@pytest.mark.django_db
def test_a_completion_alone_still_closes_as_completed(vlevel_api, automation):
    session_id = run(vlevel_api, automation)
    assert answer(vlevel_api, session_id, {"preText": "done", "completed": True})["state"]["phase"] == (
        "WAITING_COMPLETION_CONFIRMATION"
    )
    scheduler.tick(now=timezone.now() + timedelta(seconds=6))
    scheduler.tick(now=timezone.now() + timedelta(seconds=12))
    assert AISession.objects.get(pk=session_id).end_reason == "COMPLETED"
    assert not SessionMessage.objects.filter(session_id=session_id, system_type="FORMAT_ERROR").exists()


# --- 4. AUTOMATION ignores communication modules ------------------------------------------------------


def test_an_automation_ignores_a_module_and_decides_on_the_rest_of_the_answer():
    state = make_state(Phase.PARSING_AI_RESPONSE, SessionType.AUTOMATION)
    data = [{"type": "TOOL_DATA", "params": {"tool": "mood"}}]

    with_queries, effects = transition(
        state, ev(Event.AI_RESPONSE_PARSED, communicationModule=MODULE, dataCommands=data)
    )
    assert (with_queries.phase, kinds(effects)) == (Phase.EXECUTING_DATA_QUERIES, ["execute_data_queries"])

    alone, effects = transition(state, ev(Event.AI_RESPONSE_PARSED, communicationModule=MODULE))
    assert (alone.phase, kinds(effects)) == (Phase.CALLING_AI, ["call_ai"])
    assert SystemMessageType.FORMAT_ERROR not in messages(effects)

    in_chat, effects = transition(
        make_state(Phase.PARSING_AI_RESPONSE, SessionType.CHAT),
        ev(Event.AI_RESPONSE_PARSED, communicationModule=MODULE),
    )
    assert (in_chat.phase, kinds(effects)) == (Phase.WAITING_COMMUNICATION_RESPONSE, ["request_communication"])


@pytest.mark.django_db
@pytest.mark.parametrize(
    "module", [MODULE, {"type": "MultipleChoice", "data": {"question": ""}}], ids=["valid", "malformed"]
)
def test_an_automation_runs_its_queries_past_a_module_without_a_format_error_or_a_question(
    vlevel_api, automation, module
):
    session_id = run(vlevel_api, automation)
    query = {"type": "TOOL_DATA", "params": {"tool": "mood"}}
    roundtrips = AISession.objects.get(pk=session_id).total_roundtrips

    body = answer(vlevel_api, session_id, {"preText": "q", "communicationModule": module, "dataCommands": [query]})

    assert body["state"]["phase"] in ("EXECUTING_DATA_QUERIES", "CALLING_AI")  # the queries ran or went to the agent
    session = AISession.objects.get(pk=session_id)
    assert session.total_roundtrips == roundtrips + 1  # this answer only: no retry round trip
    assert not SessionMessage.objects.filter(session=session, system_type="FORMAT_ERROR").exists()
    assert not ReviewItem.objects.exists()
    assert "communicationModule" not in session.messages.filter(sender="AI").last().ai_message


@pytest.mark.django_db
def test_a_chat_still_asks_its_module_and_a_malformed_one_is_a_format_error(vlevel_api):
    session_id = chat(vlevel_api, "c")
    url = f"/sessions/{session_id}/events"
    vlevel_api.post(url, {"type": "UserMessageSent", "payload": {"text": "hi"}})
    assert answer(vlevel_api, session_id, {"preText": "?", "communicationModule": MODULE})["state"]["phase"] == (
        "WAITING_COMMUNICATION_RESPONSE"
    )
    vlevel_api.post(url, {"type": "UserMessageSent", "payload": {"text": "again"}})
    malformed = {"preText": "?", "communicationModule": {"type": "MultipleChoice", "data": {"question": ""}}}
    answer(vlevel_api, session_id, malformed)
    assert SessionMessage.objects.filter(session_id=session_id, system_type="FORMAT_ERROR").exists()


@pytest.mark.django_db
@pytest.mark.parametrize("event", ["SystemErrorOccurred", "NetworkErrorOccurred"])
def test_an_agents_error_summary_is_bounded(vlevel_api, automation, event):
    session_id = run(vlevel_api, automation)
    before = AISession.objects.values().get(pk=session_id)
    body = {"type": event, "payload": {"summary": "x" * 2_001}}

    response = vlevel_api.post(f"/sessions/{session_id}/events", body)

    assert response.status_code == 422
    assert ["body", "payload", "summary"] in [error["loc"] for error in response.json()["errors"]]
    assert AISession.objects.values().get(pk=session_id) == before
    assert not SessionMessage.objects.filter(session_id=session_id, system_type="NETWORK_ERROR").exists()
