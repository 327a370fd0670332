"""POST /jobs/lease hands out the agent's most urgent, then oldest, ready job; nextAction
"continue" queues the follow-up job in the same trace."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from agents.models import Job
from governance.kernel.models import AuditEvent
from tests.support.api import Api
from tests.support.jobs import finish_job, submit_job
from tests.support.keys import issue_key
from tests.support.manifests import load

URLS = {"urls": ["https://shop.test/a"]}
GOOD = {
    "success": True,
    "data": {"scores": [{"url": "https://shop.test/a", "level": "V2"}], "recommendations": []},
    "confidence": 0.9,
}


def queued(agent, key: str, priority: str) -> Job:
    return submit_job(agent, URLS, key=key, context={"source": "manual", "priority": priority})


@pytest.mark.django_db
def test_leases_go_by_priority_then_oldest_then_204(vlevel, vlevel_api):
    low = queued(vlevel, "low", "low")
    normal_old = queued(vlevel, "normal-1", "normal")
    high = queued(vlevel, "high", "high")
    normal_new = queued(vlevel, "normal-2", "normal")
    critical = queued(vlevel, "critical", "critical")
    later = queued(vlevel, "retry-later", "critical")
    Job.objects.filter(pk=later.pk).update(next_attempt_at=timezone.now() + timedelta(minutes=5))

    order = [vlevel_api.post("/jobs/lease", {"owner": "w1"}).json()["jobId"] for _ in range(5)]

    assert order == [str(j.job_id) for j in (critical, high, normal_old, normal_new, low)]
    assert vlevel_api.post("/jobs/lease").status_code == 204
    assert Job.objects.get(pk=high.pk).lease_owner == "w1"


@pytest.mark.django_db
def test_an_agent_only_leases_its_own_jobs_and_operators_none(vlevel, admin_api):
    queued(vlevel, "mine", "high")
    other = Api(Client(), issue_key(agent=load("agent.rag.indexer")))

    assert other.post("/jobs/lease").status_code == 204
    assert admin_api.post("/jobs/lease").status_code == 403
    assert Job.objects.get().lease_owner == ""


@pytest.mark.django_db(transaction=True)
def test_workers_leasing_at_once_each_get_a_different_job():
    vlevel = load("agent.seo.vlevel")
    for i in range(6):
        queued(vlevel, f"job-{i}", "normal")
    key = issue_key(agent=vlevel)
    start = threading.Barrier(3)
    leased: list[str] = []

    def worker(name: str) -> None:
        api = Api(Client(), key)
        start.wait()
        try:
            while (response := api.post("/jobs/lease", {"owner": name})).status_code == 200:
                leased.append(response.json()["jobId"])
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(leased) == sorted(str(pk) for pk in Job.objects.values_list("pk", flat=True))


@pytest.mark.django_db
def test_continue_queues_the_follow_up_in_the_same_trace(vlevel, vlevel_api):
    job = submit_job(vlevel, URLS, key="first")
    vlevel_api.post(f"/jobs/{job.job_id}/lease")

    response = vlevel_api.post(f"/jobs/{job.job_id}/result", {**GOOD, "nextAction": "continue"})

    assert response.status_code == 200
    follow_up = Job.objects.get(pk=response.json()["nextJobId"])
    assert (follow_up.trace_id, follow_up.parent_id, follow_up.status) == (job.trace_id, job.job_id, "queued")
    assert follow_up.payload == {**URLS, "continuation": {"fromJob": str(job.job_id), "depth": 1, "data": GOOD["data"]}}
    assert follow_up.intent == job.intent


@pytest.mark.django_db
def test_continuations_stop_at_their_limit_and_complete_adds_none(vlevel, settings):
    settings.JOB_MAX_CONTINUATIONS = 2
    job = submit_job(vlevel, URLS, key="first")
    for _ in range(3):
        finish_job(job, {**GOOD, "nextAction": "continue"})
        job = Job.objects.filter(status="queued").first() or job

    assert Job.objects.count() == 3
    assert AuditEvent.objects.filter(action="job.continuation_stopped").count() == 1
    finish_job(submit_job(vlevel, URLS, key="done"), {**GOOD, "nextAction": "complete"})
    assert Job.objects.count() == 4
