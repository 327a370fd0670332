"""One bad row is that row's problem: a periodic task logs it, reports it in its run and goes on with
the rest of the fleet.

Finding 1: a job whose `constraints.timeout` overflowed a datetime made `agents.sweep_jobs` raise
at every beat, and since one exception ended the sweep, no job of any agent was expired, timed out
or re-queued any more. The rows here are written straight to the database, as data stored before
today's checks (or by a bug) would be."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from agents.models import Agent, Escalation, Job
from agents.tasks import escalation_timeouts, sweep_jobs
from governance.kernel.models import AuditEvent, TaskRun
from sessions.models import AISession
from sessions.tasks import tick
from tests.agents.test_job_lifecycle import result
from tests.factories.sessions import AISessionFactory
from tests.support.jobs import submit_job

LONG_AGO = timedelta(days=8)  # past the longest timeout a job may have (7 days)


def ago(delta: timedelta) -> datetime:
    return timezone.now() - delta


def lease_lost(job: Job, **changes) -> None:
    """The job as a worker that died left it: running, its lease expired."""
    Job.objects.filter(pk=job.pk).update(
        status="running", attempts=1, lease_owner="gone", lease_expires_at=ago(timedelta(minutes=1)), **changes
    )


def healthy_job_of_another_agent() -> Job:
    indexer = Agent.objects.get(agent_id="agent.rag.indexer")
    job = submit_job(indexer, {"documents": [{"id": "d1", "text": "x"}]}, intent="rag_reindex")
    lease_lost(job, started_at=ago(timedelta(minutes=1)))
    return job


def last_run(task_name: str) -> TaskRun:
    return TaskRun.objects.filter(task_name=task_name).latest("started_at")


@pytest.mark.django_db
@pytest.mark.parametrize("timeout", [10**15, 10**17, 10**20], ids=["datetime", "interval", "bigint"])
def test_a_job_stored_with_a_timeout_of_another_era_ends_and_the_fleet_is_swept(world, timeout):
    poisoned = Job.objects.get(pk=world.job_id)
    lease_lost(poisoned, started_at=ago(LONG_AGO), constraints={**poisoned.constraints, "timeout": timeout})
    healthy = healthy_job_of_another_agent()

    write = world.owner.post(f"/jobs/{world.job_id}/state", {"currentNode": "late"}, HTTP_X_LEASE_OWNER="gone")
    sweep_jobs.apply()

    assert write.status_code == 409, write.content  # past the longest timeout there is, not a 500
    assert Job.objects.get(pk=healthy.pk).status == "queued"  # re-queued after its lost lease
    ended = Job.objects.get(pk=poisoned.pk)
    assert ended.status == "failed"
    assert "timeout" in ended.errors[-1]["message"]
    run = last_run("agents.sweep_jobs")
    assert (run.status, run.result["requeued"], run.result["timed_out"], run.result["errors"]) == ("success", 1, 1, 0)


@pytest.mark.django_db(transaction=True)  # as beat runs it: no test transaction around the sweep
def test_a_job_the_sweeper_cannot_read_is_reported_and_ended_and_the_rest_is_swept(world, caplog):
    poisoned = Job.objects.get(pk=world.job_id)
    lease_lost(poisoned, started_at=ago(timedelta(minutes=1)), constraints={**poisoned.constraints, "timeout": "soon"})
    healthy = healthy_job_of_another_agent()

    with caplog.at_level(logging.ERROR):
        sweep_jobs.apply()

    assert Job.objects.get(pk=healthy.pk).status == "queued"
    run = last_run("agents.sweep_jobs")
    assert (run.status, run.result["requeued"], run.result["errors"]) == ("success", 1, 1)
    assert str(poisoned.pk) in run.result["error_items"][0]["item"]
    assert str(poisoned.pk) in caplog.text
    ended = Job.objects.get(pk=poisoned.pk)
    assert ended.status == "failed"  # marked: not tried again at every beat
    assert ended.lease_owner == ""
    assert "sweeper" in ended.errors[-1]["message"]
    assert AuditEvent.objects.filter(action="job.sweep_failed", target_id=str(poisoned.pk)).exists()

    sweep_jobs.apply()
    assert last_run("agents.sweep_jobs").result["errors"] == 0


@pytest.mark.django_db
def test_an_escalation_stored_with_an_impossible_timeout_does_not_hold_back_the_others(vlevel, architect, vlevel_api):
    from tests.agents.test_jobs import envelope

    for n in range(2):
        job = vlevel_api.post("/jobs", envelope(payload={"urls": [f"https://e.com/{n}"]})).json()
        vlevel_api.post(f"/jobs/{job['jobId']}/result", result(confidence=0.4))
    poisoned, healthy = Escalation.objects.order_by("pk")
    Escalation.objects.filter(pk=poisoned.pk).update(timeout_hours=1e15)
    Escalation.objects.update(deadline=ago(timedelta(minutes=1)))

    counts = escalation_timeouts.apply().result

    assert (counts["reescalated"], counts["errors"]) == (1, 1)
    assert Escalation.objects.get(pk=healthy.pk).status == "reescalated"
    assert Escalation.objects.get(pk=poisoned.pk).status == "open"
    assert f"escalation {poisoned.pk}" in counts["error_items"][0]["item"]


@pytest.mark.django_db
def test_a_session_timer_naming_no_event_does_not_stop_the_scheduler_tick(vlevel_api, architect):
    automation = vlevel_api.post("/automations", {"name": "n", "trigger": "MANUAL", "messages": [{"text": "go"}]})
    session_id = vlevel_api.post(f"/automations/{automation.json()['id']}/execute").json()["sessionId"]
    event = {"type": "NetworkErrorOccurred", "payload": {"summary": "provider unreachable"}}
    assert vlevel_api.post(f"/sessions/{session_id}/events", event).json()["state"]["phase"] == "WAITING_NETWORK_RETRY"
    AISession.objects.filter(pk=session_id).update(timer_at=ago(timedelta(seconds=1)))
    broken = AISessionFactory(agent=architect, timer_event="NoSuchEvent", timer_at=ago(timedelta(minutes=1)))

    counts = tick.apply().result

    assert (counts["timers"], counts["errors"]) == (1, 1)
    assert AISession.objects.get(pk=session_id).phase == "CALLING_AI"
    assert str(broken.pk) in counts["error_items"][0]["item"]
