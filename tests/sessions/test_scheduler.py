"""The scheduler: one active session per agent, CHAT first, MANUAL FIFO, SCHEDULED on a free
slot with an empty queue, transparent resumes, timers and the watchdog."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from governance.reviews.models import ReviewItem
from sessions import scheduler
from sessions.models import AISession, Automation, SessionMessage
from tests.factories.sessions import AISessionFactory
from tests.support.api import Api
from tests.support.concurrency import at_once
from tests.support.keys import issue_key
from tests.support.manifests import load, manifest_text


@pytest.fixture
def automation(vlevel_api) -> Automation:
    body = {"name": "Nightly audit", "messages": [{"text": "Audit yesterday's jobs"}], "trigger": "MANUAL"}
    response = vlevel_api.post("/automations", body)
    assert response.status_code == 201
    return Automation.objects.get(pk=response.json()["id"])


def run(api, automation: Automation) -> dict:
    response = api.post(f"/automations/{automation.pk}/execute")
    assert response.status_code == 202
    return response.json()


@pytest.mark.django_db
def test_a_manual_run_starts_at_once_on_a_free_slot(vlevel_api, automation):
    started = run(vlevel_api, automation)

    assert started["status"] == "active"
    session = AISession.objects.get(pk=started["sessionId"])
    assert session.type == "AUTOMATION"
    assert session.phase == "CALLING_AI"  # the seed's message was copied and its enrichments ran
    assert session.messages.filter(sender="USER").count() == 1
    assert vlevel_api.get("/sessions/next").json()["sessionId"] == started["sessionId"]


@pytest.mark.django_db
def test_manual_runs_queue_first_in_first_out(vlevel_api, automation):
    first = run(vlevel_api, automation)
    second = run(vlevel_api, automation)
    third = run(vlevel_api, automation)
    assert (second["status"], third["status"]) == ("queued", "queued")

    vlevel_api.post(f"/sessions/{first['sessionId']}/stop")
    scheduler.tick()

    assert AISession.objects.get(is_active=True).pk.hex == second["sessionId"].replace("-", "")


@pytest.mark.django_db
def test_chat_pre_empts_an_automation_which_resumes_after(vlevel_api, automation):
    started = run(vlevel_api, automation)

    chat = vlevel_api.post("/sessions", {"type": "CHAT", "name": "Quick question"}).json()

    suspended = AISession.objects.get(pk=started["sessionId"])
    assert (suspended.is_active, suspended.end_reason, suspended.phase) == (False, "SUSPENDED", "CALLING_AI")
    assert chat["isActive"] is True
    vlevel_api.post(f"/sessions/{chat['sessionId']}/stop")
    scheduler.tick()
    resumed = AISession.objects.get(pk=started["sessionId"])
    assert (resumed.is_active, resumed.end_reason, resumed.phase) == (True, None, "CALLING_AI")
    assert not resumed.messages.filter(sender="SYSTEM").exclude(system_type="DATA_ADDED").exists()  # transparent


@pytest.mark.django_db
def test_a_scheduled_automation_waits_for_a_free_slot_and_an_empty_queue(vlevel_api, automation):
    scheduled = vlevel_api.post(
        "/automations",
        {"name": "Hourly", "messages": [{"text": "check"}], "trigger": "SCHEDULED", "intervalMinutes": 60},
    ).json()
    later = timezone.now() + timedelta(minutes=61)
    busy = run(vlevel_api, automation)
    queued = run(vlevel_api, automation)

    scheduler.tick(now=later)
    assert not AISession.objects.filter(automation_id=scheduled["id"]).exists()  # slot busy

    vlevel_api.post(f"/sessions/{busy['sessionId']}/stop")
    scheduler.tick(now=later)
    assert AISession.objects.get(is_active=True).pk.hex == queued["sessionId"].replace("-", "")  # queue first

    vlevel_api.post(f"/sessions/{queued['sessionId']}/stop")
    scheduler.tick(now=later)
    started = AISession.objects.get(is_active=True)
    assert started.automation_id == scheduled["id"]
    assert started.trigger == "SCHEDULED"
    assert Automation.objects.get(pk=scheduled["id"]).next_run_at > later


@pytest.mark.django_db
def test_the_watchdog_closes_an_idle_automation_through_awaiting_closure(vlevel_api, automation, settings):
    started = run(vlevel_api, automation)
    later = timezone.now() + timedelta(minutes=settings.SESSION_INACTIVITY_TIMEOUT_MINUTES + 1)
    AISession.objects.filter(pk=started["sessionId"]).update(phase="IDLE")

    assert scheduler.tick(now=later)["timeouts"] == 1
    closing = AISession.objects.get(pk=started["sessionId"])
    assert (closing.phase, closing.pending_end_reason) == ("AWAITING_SESSION_CLOSURE", "TIMEOUT")
    assert SessionMessage.objects.filter(session=closing, system_type="SESSION_TIMEOUT").exists()

    scheduler.tick(now=later + timedelta(seconds=6))
    ended = AISession.objects.get(pk=started["sessionId"])
    assert (ended.phase, ended.end_reason, ended.is_active) == ("COMPLETED", "TIMEOUT", False)


@pytest.mark.django_db
def test_the_watchdog_never_times_out_active_work(vlevel_api, automation, settings):
    settings.SESSION_PHASE_DEADLINES = "CALLING_AI=86400"  # the phase's own deadline is another test's
    run(vlevel_api, automation)  # rests in CALLING_AI
    later = timezone.now() + timedelta(hours=10)
    assert scheduler.tick(now=later)["timeouts"] == 0
    assert AISession.objects.get(is_active=True).phase == "CALLING_AI"


@pytest.mark.django_db
def test_a_network_error_in_automation_retries_30_seconds_later(vlevel_api, automation):
    started = run(vlevel_api, automation)
    url = f"/sessions/{started['sessionId']}/events"
    body = vlevel_api.post(url, {"type": "NetworkErrorOccurred", "payload": {"summary": "provider unreachable"}}).json()
    assert body["state"]["phase"] == "WAITING_NETWORK_RETRY"

    assert scheduler.tick(now=timezone.now() + timedelta(seconds=10))["timers"] == 0
    assert scheduler.tick(now=timezone.now() + timedelta(seconds=31))["timers"] == 1
    assert AISession.objects.get(pk=started["sessionId"]).phase == "CALLING_AI"
    prompt = vlevel_api.get(f"/sessions/{started['sessionId']}/prompt").json()
    assert all(
        m["systemMessage"] is None or m["systemMessage"]["type"] != "NETWORK_ERROR" for m in prompt["sessionMessages"]
    )


@pytest.mark.django_db
def test_a_network_error_in_chat_returns_to_idle(vlevel_api):
    chat = vlevel_api.post("/sessions", {"type": "CHAT", "name": "c"}).json()
    url = f"/sessions/{chat['sessionId']}/events"
    vlevel_api.post(url, {"type": "UserMessageSent", "payload": {"text": "hi"}})
    body = vlevel_api.post(url, {"type": "NetworkErrorOccurred", "payload": {}}).json()
    assert (body["state"]["phase"], body["state"]["isActive"]) == ("IDLE", True)


@pytest.mark.django_db
def test_an_unanswered_validation_expires_rejected_by_system(vlevel_api, settings):
    import json

    chat = vlevel_api.post("/sessions", {"type": "CHAT", "name": "c"}).json()
    url = f"/sessions/{chat['sessionId']}/events"
    vlevel_api.post(url, {"type": "UserMessageSent", "payload": {"text": "snap"}})
    action = {"type": "mcp__chrome-devtools__take_snapshot", "params": {}}
    vlevel_api.post(
        url,
        {
            "type": "AIResponseReceived",
            "payload": {"content": json.dumps({"preText": "ok", "actionCommands": [action]})},
        },
    )

    scheduler.tick(now=timezone.now() + timedelta(hours=settings.REVIEW_EXPIRY_HOURS, minutes=1))

    item = ReviewItem.objects.get()
    assert item.status == "expired"
    assert item.decision.decided_by == "system"
    session = AISession.objects.get()
    assert session.phase == "IDLE"
    assert SessionMessage.objects.filter(fallback_kind="VALIDATION_CANCELLED", removed_at__isnull=True).exists()


@pytest.mark.django_db
def test_the_database_itself_refuses_a_second_active_session(vlevel):
    AISession.objects.create(agent=vlevel, name="a", type="CHAT", is_active=True)
    with pytest.raises(IntegrityError), transaction.atomic():
        AISession.objects.create(agent=vlevel, name="b", type="CHAT", is_active=True)


@pytest.mark.django_db(transaction=True)
def test_two_ticks_at_once_never_activate_two_sessions_for_one_agent(vlevel):
    load("agent.seo.architect")
    for n in range(6):
        AISessionFactory(agent=vlevel, name=f"queued {n}", type="AUTOMATION", queued_at=timezone.now())

    _, errors = at_once(scheduler.tick, 4)

    assert errors == []
    assert AISession.objects.filter(agent=vlevel, is_active=True).count() == 1


@pytest.mark.django_db
def test_a_decision_taken_while_the_session_was_suspended_applies_when_it_resumes(vlevel_api, client, reviewer):
    import json

    from sessions.models import Automation as AutomationModel

    seed_body = {"name": "auto", "messages": [{"text": "go"}], "trigger": "MANUAL"}
    automation = AutomationModel.objects.get(pk=vlevel_api.post("/automations", seed_body).json()["id"])
    started = run(vlevel_api, automation)
    url = f"/sessions/{started['sessionId']}/events"
    action = {"type": "mcp__chrome-devtools__take_snapshot", "params": {}}
    content = json.dumps({"preText": "snap", "actionCommands": [action]})
    assert (
        vlevel_api.post(url, {"type": "AIResponseReceived", "payload": {"content": content}}).json()["state"]["phase"]
        == "WAITING_VALIDATION"
    )  # a tool that requires approval waits even in AUTOMATION
    chat = vlevel_api.post("/sessions", {"type": "CHAT", "name": "interrupt"}).json()
    item = ReviewItem.objects.get()
    Api(client, issue_key(user=reviewer)).post(f"/reviews/{item.pk}/decision", {"decision": "approve"})
    assert AISession.objects.get(pk=started["sessionId"]).phase == "WAITING_VALIDATION"  # suspended: untouched

    vlevel_api.post(f"/sessions/{chat['sessionId']}/stop")
    scheduler.tick()

    resumed = AISession.objects.get(pk=started["sessionId"])
    assert (resumed.is_active, resumed.phase) == (True, "EXECUTING_ACTIONS")


@pytest.mark.django_db
def test_stopping_is_recorded_and_withdraws_the_pending_question(vlevel_api):
    import json

    from governance.kernel.models import AuditEvent

    chat = vlevel_api.post("/sessions", {"type": "CHAT", "name": "c"}).json()
    url = f"/sessions/{chat['sessionId']}/events"
    vlevel_api.post(url, {"type": "UserMessageSent", "payload": {"text": "snap"}})
    action = {"type": "mcp__chrome-devtools__take_snapshot", "params": {}}
    content = json.dumps({"preText": "ok", "actionCommands": [action]})
    vlevel_api.post(url, {"type": "AIResponseReceived", "payload": {"content": content}})

    vlevel_api.post(f"/sessions/{chat['sessionId']}/stop")

    assert AuditEvent.objects.filter(action="session.stopped", actor="agent:agent.seo.vlevel").exists()
    item = ReviewItem.objects.get()
    assert item.status == "expired"
    assert "stopped" in item.decision.comment


@pytest.mark.django_db
def test_a_tool_may_set_a_shorter_approval_timeout(client, admin_api):
    import json

    from agents.manifest import read_text

    document = read_text(manifest_text("agent.seo.vlevel"))
    document["tools"][1]["approval_timeout_hours"] = 2
    assert admin_api.put("/agents/agent.seo.vlevel/manifest", document).status_code == 201
    from agents.models import Agent

    api = Api(client, issue_key(agent=Agent.objects.get(agent_id="agent.seo.vlevel")))
    chat = api.post("/sessions", {"type": "CHAT", "name": "c"}).json()
    url = f"/sessions/{chat['sessionId']}/events"
    api.post(url, {"type": "UserMessageSent", "payload": {"text": "snap"}})
    action = {"type": "mcp__chrome-devtools__take_snapshot", "params": {}}
    api.post(
        url,
        {
            "type": "AIResponseReceived",
            "payload": {"content": json.dumps({"preText": "ok", "actionCommands": [action]})},
        },
    )

    item = ReviewItem.objects.get()
    assert timedelta(hours=1, minutes=59) < item.expires_at - item.created_at < timedelta(hours=2, minutes=1)
    scheduler.tick(now=timezone.now() + timedelta(hours=2, minutes=1))
    item.refresh_from_db()
    assert item.status == "expired"
