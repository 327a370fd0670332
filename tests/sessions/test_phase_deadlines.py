"""Sessions always end or move on: each active phase has a deadline, stored on the session; past
it, an agent that did not report gives its slot up (the tick is the backstop for the lost
timer), and an activation on a busy slot is a 409, never an IntegrityError."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.utils import timezone

from governance.kernel.exceptions import Conflict
from governance.kernel.principals import SYSTEM
from sessions import scheduler
from sessions.machine import ACTIVE_PHASES, parse_phase_deadlines
from sessions.models import AISession, Automation
from sessions.processor import apply_event

ACTION = {"type": "mcp__supabase__execute_sql", "params": {"query": "select 1"}}


@pytest.fixture
def automation(vlevel_api) -> Automation:
    body = {"name": "Nightly audit", "messages": [{"text": "Audit yesterday's jobs"}], "trigger": "MANUAL"}
    response = vlevel_api.post("/automations", body)
    assert response.status_code == 201
    return Automation.objects.get(pk=response.json()["id"])


def start(api, automation: Automation) -> AISession:
    session_id = api.post(f"/automations/{automation.pk}/execute").json()["sessionId"]
    return AISession.objects.get(pk=session_id)


@pytest.mark.django_db
def test_entering_an_active_phase_stores_its_deadline(vlevel_api, automation, settings):
    settings.SESSION_PHASE_DEADLINES = "CALLING_AI=90"
    before = timezone.now()
    session = start(vlevel_api, automation)

    assert session.phase == "CALLING_AI"
    assert before + timedelta(seconds=90) <= session.phase_deadline_at <= timezone.now() + timedelta(seconds=90)


@pytest.mark.django_db
def test_a_dead_agent_in_calling_ai_gives_its_slot_up_at_the_deadline(vlevel_api, automation):
    session = start(vlevel_api, automation)
    deadline = session.phase_deadline_at

    assert scheduler.tick(now=deadline - timedelta(seconds=1))["deadlines"] == 0
    assert scheduler.tick(now=deadline + timedelta(seconds=1))["deadlines"] == 1

    session.refresh_from_db()
    assert (session.is_active, session.end_reason, session.phase) == (False, "NETWORK_ERROR", "CALLING_AI")
    assert session.messages.filter(system_type="NETWORK_ERROR").count() == 1
    assert not AISession.objects.filter(agent=session.agent, is_active=True).exists()
    # It resumes later (the seed's NETWORK_ERROR: resumed with retry), not straight away.
    scheduler.tick(now=deadline + timedelta(seconds=2))
    assert not AISession.objects.filter(agent=session.agent, is_active=True).exists()
    scheduler.tick(now=deadline + timedelta(seconds=40))
    session.refresh_from_db()
    assert (session.is_active, session.phase) == (True, "CALLING_AI")
    assert session.phase_deadline_at == deadline + timedelta(seconds=40) + timedelta(seconds=120)


@pytest.mark.django_db
def test_a_dead_agent_executing_actions_gives_its_slot_up_and_is_asked_for_outcomes_later(vlevel_api, automation):
    session = start(vlevel_api, automation)
    content = json.dumps({"preText": "Fixing.", "actionCommands": [ACTION]})
    vlevel_api.post(f"/sessions/{session.pk}/events", {"type": "AIResponseReceived", "payload": {"content": content}})
    session.refresh_from_db()
    assert session.phase == "EXECUTING_ACTIONS"
    deadline = session.phase_deadline_at

    scheduler.tick(now=deadline)
    session.refresh_from_db()
    assert (session.is_active, session.end_reason) == (False, "NETWORK_ERROR")
    assert session.messages.filter(system_type="SESSION_TIMEOUT").count() == 1

    scheduler.tick(now=deadline + timedelta(minutes=5))
    session.refresh_from_db()
    assert session.is_active
    assert session.waiting_context["type"] == "ActionOutcomes"


@pytest.mark.django_db
def test_a_chat_past_its_deadline_goes_back_to_idle_and_keeps_its_slot(vlevel_api):
    chat = vlevel_api.post("/sessions", {"type": "CHAT", "name": "help"}).json()["sessionId"]
    vlevel_api.post(f"/sessions/{chat}/events", {"type": "UserMessageSent", "payload": {"text": "hi"}})
    session = AISession.objects.get(pk=chat)

    scheduler.tick(now=session.phase_deadline_at + timedelta(seconds=1))

    session.refresh_from_db()
    assert (session.phase, session.is_active, session.phase_deadline_at) == ("IDLE", True, None)
    assert session.messages.filter(system_type="NETWORK_ERROR").count() == 1


@pytest.mark.django_db
def test_an_answer_in_time_leaves_the_old_deadline_unfired(vlevel_api, automation):
    session = start(vlevel_api, automation)
    old = session.phase_deadline_at
    content = json.dumps({"preText": "Nothing to do.", "completed": True})
    vlevel_api.post(f"/sessions/{session.pk}/events", {"type": "AIResponseReceived", "payload": {"content": content}})

    assert scheduler.fire_deadline(str(session.pk), old.isoformat(), now=old + timedelta(seconds=1)) is False
    session.refresh_from_db()
    assert (session.is_active, session.phase_deadline_at) == (True, None)


@pytest.mark.django_db
def test_an_activation_on_a_busy_slot_is_a_conflict_not_an_integrity_error(vlevel_api, automation):
    """Every path that activates (the scheduler, a chat, any future caller of the processor) gets
    the 409 Conflict; the partial unique index stays the last word and is never a 500."""
    vlevel_api.post("/sessions", {"type": "CHAT", "name": "busy"})
    queued = vlevel_api.post(f"/automations/{automation.pk}/execute").json()
    assert queued["status"] == "queued"

    with pytest.raises(Conflict) as refused:
        apply_event(queued["sessionId"], "SessionActivationRequested", {}, actor=SYSTEM)

    assert refused.value.extra["event"] == "SessionActivationRequested"
    assert AISession.objects.filter(is_active=True).count() == 1
    assert AISession.objects.get(pk=queued["sessionId"]).is_active is False


@pytest.mark.parametrize(
    "text",
    ["CALLING_AI", "CALLING_AI=0", "CALLING_AI=-5", "CALLING_AI=2m", "IDLE=10", "WAITING_VALIDATION=60", "NOPE=1"],
)
def test_a_bad_deadline_setting_is_refused_with_what_is_wrong(text):
    with pytest.raises(ValueError, match=r"CALLING_AI|seconds"):
        parse_phase_deadlines(text)


def test_the_deadline_setting_overrides_the_seed_defaults():
    deadlines = parse_phase_deadlines(" EXECUTING_ACTIONS=900 , ")
    assert set(deadlines) == set(ACTIVE_PHASES)  # every active phase has one
    assert int(deadlines["CALLING_AI"].total_seconds()) == 120  # the seed's 2-minute HTTP timeout
    assert int(deadlines["EXECUTING_ACTIONS"].total_seconds()) == 900


def test_a_bad_deadline_setting_stops_the_checks_that_serve_and_migrate_run(settings):
    settings.SESSION_PHASE_DEADLINES = "CALLING_AI=2m"

    with pytest.raises(SystemCheckError, match=r"sessions.E001.*SESSION_PHASE_DEADLINES"):
        call_command("check")

    settings.SESSION_PHASE_DEADLINES = "CALLING_AI=300"
    call_command("check")  # a good value passes
