"""Automation schedules: an interval or a cron expression (django-celery-beat's CrontabSchedule),
changed with PATCH /automations/{id} by the owner agent or an operator, through one audited
service; a switched-off automation has no next run, so the scheduler's tick never starts it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule

from governance.kernel import cron
from governance.kernel.models import AuditEvent
from sessions import scheduler
from sessions.models import AISession, Automation
from tests.support.api import Api
from tests.support.keys import issue_key

SEED = [{"text": "Audit yesterday's jobs"}]


def create(api, **fields) -> dict:
    response = api.post("/automations", {"name": "Morning audit", "messages": SEED, **fields})
    assert response.status_code == 201, response.json()
    return response.json()


def patch(api, automation_id: int, body: dict):
    return api.send("patch", f"/automations/{automation_id}", body)


def test_a_cron_names_the_next_time_strictly_after_the_moment():
    weekdays_at_nine = cron.parse("0 9 * * 1-5")
    wednesday_nine = datetime(2026, 11, 25, 9, 0, tzinfo=UTC)

    assert cron.next_after(weekdays_at_nine, wednesday_nine, UTC) == datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
    friday_noon = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
    assert cron.next_after(weekdays_at_nine, friday_noon, UTC) == datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "named"),
    [("0 9 * *", "5 fields"), ("61 * * * *", "minute"), ("0 25 * * *", "hour"), ("0 9 * * 8", "day of week")],
)
def test_a_malformed_cron_is_refused_naming_what_is_wrong(text, named):
    with pytest.raises(ValueError, match=named):
        cron.parse(text)


@pytest.mark.django_db
def test_an_agent_schedules_its_automation_with_a_cron(vlevel_api):
    before = timezone.now()

    created = create(vlevel_api, cron="30 6 * * *")

    assert (created["cron"], created["intervalMinutes"]) == ("30 6 * * *", None)
    next_run = datetime.fromisoformat(created["nextRunAt"])
    assert before < next_run <= before + timedelta(days=1)
    assert (next_run.hour, next_run.minute) == (6, 30)
    automation = Automation.objects.get(pk=created["id"])
    assert (automation.crontab.minute, automation.crontab.hour) == ("30", "6")
    assert (
        AuditEvent.objects.get(action="automation.created", target_id=str(automation.pk)).data["cron"] == "30 6 * * *"
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"cron": "every morning"}, ["body", "cron"]),
        ({"cron": "0 9 * * *", "intervalMinutes": 60}, ["body", "cron"]),
        ({}, ["body", "intervalMinutes"]),
    ],
)
def test_a_bad_schedule_at_creation_is_a_422_at_its_field_and_writes_nothing(vlevel_api, body, loc):
    response = vlevel_api.post("/automations", {"name": "Bad", "messages": SEED, **body})

    assert response.status_code == 422
    assert [error["loc"] for error in response.json()["errors"]] == [loc]
    assert not Automation.objects.exists()
    assert not AISession.objects.filter(type="SEED").exists()
    assert not CrontabSchedule.objects.filter(minute="0", hour="9").exists()


@pytest.mark.django_db
def test_the_owner_agent_switches_an_interval_automation_to_a_cron(vlevel_api):
    created = create(vlevel_api, intervalMinutes=15)

    response = patch(vlevel_api, created["id"], {"cron": "0 9 * * 1-5", "name": "Weekday audit"})

    assert response.status_code == 200
    changed = response.json()
    assert (changed["name"], changed["cron"], changed["intervalMinutes"]) == ("Weekday audit", "0 9 * * 1-5", None)
    next_run = datetime.fromisoformat(changed["nextRunAt"])
    assert (next_run.hour, next_run.minute, next_run.isoweekday() <= 5) == (9, 0, True)
    audit = AuditEvent.objects.filter(action="automation.changed", target_id=str(created["id"])).get()
    assert audit.data["fields"] == {"cron": "0 9 * * 1-5", "name": "Weekday audit"}
    assert audit.actor == "agent:agent.seo.vlevel"


@pytest.mark.django_db
def test_an_operator_switches_a_cron_automation_back_to_an_interval(vlevel_api, admin_api):
    created = create(vlevel_api, cron="0 9 * * *")
    before = timezone.now()

    response = patch(admin_api, created["id"], {"intervalMinutes": 30})

    assert response.status_code == 200
    assert (response.json()["cron"], response.json()["intervalMinutes"]) == (None, 30)
    next_run = datetime.fromisoformat(response.json()["nextRunAt"])
    assert before + timedelta(minutes=29) < next_run < timezone.now() + timedelta(minutes=31)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"cron": "0 9 * * *", "intervalMinutes": 5}, ["body", "cron"]),
        ({"cron": "0 9 31 2 mon-fry"}, ["body", "cron"]),
        ({"cron": None}, ["body", "intervalMinutes"]),  # a SCHEDULED automation left without a schedule
        ({"name": None}, ["body", "name"]),
        ({"intervalMinutes": 0}, ["body", "intervalMinutes"]),
        ({"trigger": "MANUAL"}, ["body", "trigger"]),  # not a field PATCH changes
    ],
)
def test_a_bad_patch_is_a_422_at_its_field_and_changes_nothing(vlevel_api, body, loc):
    created = create(vlevel_api, cron="0 6 * * *")

    response = patch(vlevel_api, created["id"], body)

    assert response.status_code == 422
    assert response.headers["Content-Type"].startswith("application/problem+json")
    assert response.json()["errors"][0]["loc"] == loc
    automation = Automation.objects.get(pk=created["id"])
    assert (automation.cron, automation.interval_minutes, automation.name) == ("0 6 * * *", None, "Morning audit")
    assert not AuditEvent.objects.filter(action="automation.changed").exists()


@pytest.mark.django_db
def test_another_agent_cannot_change_the_automation(vlevel_api, client, architect):
    created = create(vlevel_api, intervalMinutes=15)
    architect_api = Api(client, issue_key(agent=architect))

    response = patch(architect_api, created["id"], {"enabled": False})

    assert response.status_code == 403
    assert Automation.objects.get(pk=created["id"]).enabled is True
    assert patch(architect_api, 999_999, {"enabled": False}).status_code == 404


@pytest.mark.django_db
def test_a_reviewer_cannot_change_an_automation(vlevel_api, client, reviewer):
    created = create(vlevel_api, intervalMinutes=15)

    response = patch(Api(client, issue_key(user=reviewer)), created["id"], {"enabled": False})

    assert response.status_code == 403
    assert Automation.objects.get(pk=created["id"]).enabled is True


@pytest.mark.django_db
def test_a_switched_off_automation_is_not_started_and_switching_on_plans_the_next_run(vlevel_api):
    created = create(vlevel_api, intervalMinutes=15)
    Automation.objects.filter(pk=created["id"]).update(next_run_at=timezone.now() - timedelta(minutes=1))

    off = patch(vlevel_api, created["id"], {"enabled": False})
    scheduler.tick()

    assert (off.json()["enabled"], off.json()["nextRunAt"]) == (False, None)
    assert not AISession.objects.filter(type="AUTOMATION").exists()
    on = patch(vlevel_api, created["id"], {"enabled": True}).json()
    assert datetime.fromisoformat(on["nextRunAt"]) > timezone.now() + timedelta(minutes=14)


@pytest.mark.django_db
def test_a_due_cron_automation_runs_on_the_tick_and_waits_for_its_next_time(vlevel_api):
    created = create(vlevel_api, cron="0 9 * * *")
    now = datetime(2026, 11, 25, 9, 3, tzinfo=UTC)
    Automation.objects.filter(pk=created["id"]).update(next_run_at=now - timedelta(minutes=3))

    scheduler.tick(now=now)

    session = AISession.objects.get(type="AUTOMATION")
    assert session.automation_id == created["id"]
    assert Automation.objects.get(pk=created["id"]).next_run_at == datetime(2026, 11, 26, 9, 0, tzinfo=UTC)


@pytest.mark.django_db
def test_the_admin_shows_and_edits_the_schedule(vlevel_api, admin_client):
    created = create(vlevel_api, cron="0 9 * * 1-5")
    url = f"/admin/ai_sessions/automation/{created['id']}/change/"

    listing = admin_client.get("/admin/ai_sessions/automation/")
    assert "cron 0 9 * * 1-5 (UTC)" in listing.content.decode()

    refused = admin_client.post(
        url, {"enabled": "on", "trigger": "SCHEDULED", "interval_minutes": "10", "cron": "0 9 * * 1-5"}
    )
    assert refused.status_code == 200
    assert "not both" in refused.content.decode()

    saved = admin_client.post(
        url, {"enabled": "on", "trigger": "SCHEDULED", "interval_minutes": "", "cron": "15 7 * * *"}
    )
    assert saved.status_code == 302
    assert Automation.objects.get(pk=created["id"]).cron == "15 7 * * *"
    assert AuditEvent.objects.filter(action="automation.changed", target_id=str(created["id"])).exists()


@pytest.mark.django_db
def test_a_late_run_shows_its_slot_and_lateness_and_the_next_slot_keeps_the_cadence(vlevel_api, client, viewer):
    created = create(vlevel_api, intervalMinutes=60)
    due = timezone.now().replace(microsecond=0) - timedelta(minutes=7)  # the tick came 7 minutes late
    Automation.objects.filter(pk=created["id"]).update(next_run_at=due)

    scheduler.tick()

    run = AISession.objects.get(automation_id=created["id"])
    state = vlevel_api.get(f"/sessions/{run.pk}").json()
    assert datetime.fromisoformat(state["scheduledExecutionTime"]) == due
    assert Automation.objects.get(pk=created["id"]).next_run_at == due + timedelta(minutes=60)  # not 7 min later
    client.force_login(viewer)
    page = client.get(f"/sessions/{run.pk}/").content.decode()
    assert f"Scheduled for</dt><dd>{due:%Y-%m-%d %H:%M:%S} (started 7\xa0minutes late)" in page


@pytest.mark.django_db
def test_slots_missed_while_nothing_ticked_give_one_run_and_the_next_slot_on_the_cadence(vlevel_api):
    created = create(vlevel_api, intervalMinutes=60)
    due = datetime(2026, 11, 25, 9, 0, tzinfo=UTC)
    Automation.objects.filter(pk=created["id"]).update(next_run_at=due)

    scheduler.tick(now=due + timedelta(minutes=150))  # the 10:00 and 11:00 slots went by unticked

    runs = AISession.objects.filter(automation_id=created["id"])
    assert [run.scheduled_execution_time for run in runs] == [due]
    assert Automation.objects.get(pk=created["id"]).next_run_at == datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
    manual = vlevel_api.post(f"/automations/{created['id']}/execute").json()
    assert vlevel_api.get(f"/sessions/{manual['sessionId']}").json()["scheduledExecutionTime"] is None
