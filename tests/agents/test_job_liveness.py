"""Jobs always end: the sweeper (expired leases, expiresAt, constraints.timeout), the current
lease owner as the only writer, budgets (tokens, docs, cost), dryRun and reused idempotency keys.

Hostile or buggy workers first: a stale worker, a worker past its deadline or budget, a caller
reusing its key for other work."""

from __future__ import annotations

import importlib
import threading
from datetime import timedelta

import pytest
from django.apps import apps
from django.db import connection
from django.test import override_settings
from django.utils import timezone
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from agents.envelope import JobEnvelopeIn
from agents.jobs import leases, submission
from agents.jobs.sweep import sweep
from agents.models import Escalation, Job, JobArtifact, KpiSample, ToolCall, ToolGrant
from governance.kernel.models import AuditEvent, TaskRun
from governance.kernel.principals import Principal
from governance.reviews.models import ReviewItem
from tests.agents.test_job_lifecycle import result
from tests.agents.test_jobs import URLS, envelope
from tests.governance.test_heartbeat import _start, _stop
from tests.support.processes import database_url_of_tests, process_env, wait_for

SQL = "/agents/agent.seo.vlevel/tools/mcp__supabase__execute_sql/calls"
SNAPSHOT = "/agents/agent.seo.vlevel/tools/mcp__chrome-devtools__take_snapshot/calls"


def owner(name: str) -> dict:
    return {"HTTP_X_LEASE_OWNER": name}


def past(seconds: float = 1) -> timezone.datetime:
    return timezone.now() - timedelta(seconds=seconds)


@pytest.fixture
def job(vlevel_api) -> dict:
    return vlevel_api.post("/jobs", envelope()).json()


def lease(api, job: dict, name: str):
    return api.post(f"/jobs/{job['jobId']}/lease", {"owner": name})


# --- 6. only the current lease owner writes -------------------------------------------------


@pytest.mark.django_db
def test_a_worker_whose_lease_was_taken_over_gets_409(vlevel_api, job):
    lease(vlevel_api, job, "w1")
    Job.objects.update(lease_expires_at=past())
    assert lease(vlevel_api, job, "w2").status_code == 200

    stale_state = vlevel_api.post(f"/jobs/{job['jobId']}/state", {"currentNode": "x"}, **owner("w1"))
    stale_result = vlevel_api.post(f"/jobs/{job['jobId']}/result", result(), **owner("w1"))

    assert stale_state.status_code == 409
    assert stale_state.json()["leaseOwner"] == "w2"
    assert stale_result.status_code == 409
    stored = Job.objects.get()
    assert (stored.current_node, stored.output, stored.status) == ("start", None, "running")
    assert vlevel_api.post(f"/jobs/{job['jobId']}/state", {"currentNode": "y"}, **owner("w2")).status_code == 200


@pytest.mark.django_db
def test_a_worker_whose_lease_expired_gets_409_even_if_nobody_took_over(vlevel_api, job):
    lease(vlevel_api, job, "w1")
    Job.objects.update(lease_expires_at=past())

    assert vlevel_api.post(f"/jobs/{job['jobId']}/state", {"currentNode": "x"}, **owner("w1")).status_code == 409
    assert vlevel_api.post(f"/jobs/{job['jobId']}/result", result(), **owner("w1")).status_code == 409
    assert Job.objects.get().output is None


@pytest.mark.django_db
def test_another_worker_cannot_write_under_a_live_lease(vlevel_api, job):
    lease(vlevel_api, job, "w1")
    assert vlevel_api.post(f"/jobs/{job['jobId']}/result", result(), **owner("intruder")).status_code == 409
    assert vlevel_api.post(f"/jobs/{job['jobId']}/result", result()).status_code == 409  # key prefix is not w1
    assert vlevel_api.post(f"/jobs/{job['jobId']}/result", result(), **owner("w1")).json()["status"] == "succeeded"


@pytest.mark.django_db
def test_without_an_owner_the_key_prefix_is_the_worker(vlevel_api, job):
    vlevel_api.post(f"/jobs/{job['jobId']}/lease", {})
    assert vlevel_api.post(f"/jobs/{job['jobId']}/state", {"currentNode": "x"}).status_code == 200
    assert vlevel_api.post(f"/jobs/{job['jobId']}/result", result()).json()["status"] == "succeeded"


@pytest.mark.django_db
@override_settings(JOB_RETRY_BASE_SECONDS=30, JOB_LOCK_BACKOFF="exponential")
def test_a_job_requeued_by_the_sweeper_refuses_its_old_worker(vlevel_api, job):
    lease(vlevel_api, job, "w1")
    Job.objects.update(lease_expires_at=past())
    sweep()

    assert Job.objects.get().status == "queued"
    assert vlevel_api.post(f"/jobs/{job['jobId']}/result", result(), **owner("w1")).status_code == 409
    assert vlevel_api.post(f"/jobs/{job['jobId']}/state", {"currentNode": "x"}, **owner("w1")).status_code == 409


@pytest.mark.django_db
def test_a_job_never_leased_takes_writes_from_its_agent(vlevel_api, job):
    """No lease taken yet (attempts 0): the owner agent may run it without one."""
    assert vlevel_api.post(f"/jobs/{job['jobId']}/state", {"currentNode": "x"}).status_code == 200
    assert vlevel_api.post(f"/jobs/{job['jobId']}/result", result()).json()["status"] == "succeeded"


# --- 1. the sweeper: expired leases ---------------------------------------------------------


@pytest.mark.django_db
@override_settings(JOB_RETRY_BASE_SECONDS=30, JOB_LOCK_BACKOFF="exponential", JOB_LOCK_RETRY=3)
def test_an_expired_lease_is_requeued_with_backoff(vlevel_api, job):
    lease(vlevel_api, job, "w1")
    Job.objects.update(lease_expires_at=past())
    before = timezone.now()

    counts = sweep()

    assert counts["requeued"] == 1
    stored = Job.objects.get()
    assert stored.status == "queued"
    assert (stored.lease_owner, stored.lease_expires_at) == ("", None)
    assert timedelta(seconds=29) < stored.next_attempt_at - before < timedelta(seconds=32)
    event = AuditEvent.objects.get(action="job.lease_expired")
    assert (event.actor, event.data["owner"], event.data["requeued"]) == ("system", "w1", True)

    assert sweep() == {"requeued": 0, "failed": 0, "expired": 0, "timed_out": 0, "errors": 0}  # idempotent
    assert lease(vlevel_api, job, "w2").status_code == 409  # not before the backoff
    Job.objects.update(next_attempt_at=past())
    assert lease(vlevel_api, job, "w2").json()["lease"]["attempts"] == 2


@pytest.mark.django_db
@override_settings(JOB_RETRY_BASE_SECONDS=1, JOB_LOCK_BACKOFF="linear", JOB_LOCK_RETRY=2)
def test_the_last_expired_lease_fails_the_job_with_artifacts_escalation_and_kpi(vlevel_api, job):
    for name in ("w1", "w2"):
        Job.objects.update(next_attempt_at=None)  # the backoff has passed
        assert lease(vlevel_api, job, name).status_code == 200
        Job.objects.update(lease_expires_at=past())
        sweep()

    stored = Job.objects.get()
    assert stored.status == "failed"
    assert stored.finished_at is not None
    assert stored.attempts == 2
    assert sorted(JobArtifact.objects.values_list("kind", flat=True)) == ["audit", "backlog", "graph"]
    escalation = Escalation.objects.get(job=stored)
    assert escalation.triggers == ["lease expired after 2 attempts"]
    assert escalation.review_item is not None  # the target agent is not registered here: a human
    assert KpiSample.objects.get(metric_id="task_success_rate", job=stored).value == 0.0
    body = vlevel_api.get(f"/jobs/{job['jobId']}").json()
    assert body["status"] == "failed"
    assert body["escalations"][0]["triggers"] == ["lease expired after 2 attempts"]
    assert "lease expired" in vlevel_api.get(f"/jobs/{job['jobId']}/artifacts/audit").content.decode()
    assert lease(vlevel_api, job, "w3").status_code == 409


@pytest.mark.django_db
@override_settings(JOB_LOCK_RETRY=1)
def test_a_failed_jobs_escalation_goes_to_the_target_agent(vlevel_api, architect, job):
    lease(vlevel_api, job, "w1")
    Job.objects.update(lease_expires_at=past())
    sweep()

    escalation = Escalation.objects.get()
    assert escalation.target_agent == architect
    assert escalation.child_job.agent == architect


@pytest.mark.django_db(transaction=True)
@override_settings(JOB_LOCK_RETRY=1)
def test_two_sweepers_share_the_work_and_each_job_ends_once(vlevel):
    actor = Principal(agent=vlevel)
    for n in range(12):
        job, _ = submission.submit_job(JobEnvelopeIn(**envelope(payload={"urls": [f"https://e.com/{n}"]})), actor=actor)
        leases.claim_lease(job, actor=actor, owner=f"w{n}")
    Job.objects.update(lease_expires_at=past())
    totals: list[dict] = []
    barrier = threading.Barrier(2)

    def sweeper():
        try:
            barrier.wait()
            totals.append(sweep())
        finally:
            connection.close()

    threads = [threading.Thread(target=sweeper) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sum(t["failed"] for t in totals) == 12
    assert set(Job.objects.values_list("status", flat=True)) == {"failed"}
    assert AuditEvent.objects.filter(action="job.lease_expired").count() == 12
    assert Escalation.objects.count() == 12
    assert KpiSample.objects.filter(metric_id="task_success_rate").count() == 12


# --- 2. expiresAt ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_job_past_expires_at_is_expired_by_the_sweeper(vlevel_api):
    job = vlevel_api.post("/jobs", envelope(expiresAt=(timezone.now() + timedelta(hours=1)).isoformat())).json()
    lease(vlevel_api, job, "w1")
    Job.objects.update(expires_at=past())

    assert sweep()["expired"] == 1

    stored = Job.objects.get()
    assert stored.status == "expired"
    assert stored.finished_at is not None
    assert stored.lease_owner == ""
    assert sorted(JobArtifact.objects.values_list("kind", flat=True)) == ["audit", "backlog", "graph"]
    assert AuditEvent.objects.filter(action="job.expired", actor="system").exists()
    assert lease(vlevel_api, job, "w1").status_code == 409
    assert vlevel_api.post(f"/jobs/{job['jobId']}/state", {"currentNode": "x"}, **owner("w1")).status_code == 409
    assert vlevel_api.post(f"/jobs/{job['jobId']}/result", result(), **owner("w1")).status_code == 409


@pytest.mark.django_db
def test_writes_past_expires_at_are_409_before_the_sweeper_runs(vlevel_api):
    job = vlevel_api.post("/jobs", envelope(expiresAt=(timezone.now() + timedelta(hours=1)).isoformat())).json()
    lease(vlevel_api, job, "w1")
    Job.objects.update(expires_at=past())

    refused = vlevel_api.post(f"/jobs/{job['jobId']}/result", result(), **owner("w1"))

    assert refused.status_code == 409
    assert refused.json()["jobStatus"] == "expired"
    assert lease(vlevel_api, job, "w1").status_code == 409
    assert Job.objects.get().output is None


# --- 3. constraints.timeout -----------------------------------------------------------------


@pytest.mark.django_db
def test_a_job_past_its_timeout_is_failed_and_refuses_writes(vlevel_api):
    job = vlevel_api.post("/jobs", envelope(constraints={"timeout": 60_000})).json()
    lease(vlevel_api, job, "w1")
    Job.objects.update(started_at=past(61), lease_expires_at=timezone.now() + timedelta(minutes=5))

    refused = vlevel_api.post(f"/jobs/{job['jobId']}/state", {"currentNode": "x"}, **owner("w1"))
    assert refused.status_code == 409
    assert "timeout" in refused.json()["detail"]

    assert sweep()["timed_out"] == 1
    stored = Job.objects.get()
    assert stored.status == "failed"
    assert Escalation.objects.get(job=stored).triggers == ["timeout of 60000 ms exceeded"]
    assert KpiSample.objects.get(metric_id="task_success_rate").value == 0.0
    assert vlevel_api.post(f"/jobs/{job['jobId']}/result", result(), **owner("w1")).status_code == 409


@pytest.mark.django_db
def test_a_job_within_its_timeout_is_left_alone(vlevel_api):
    job = vlevel_api.post("/jobs", envelope(constraints={"timeout": 60_000})).json()
    lease(vlevel_api, job, "w1")
    Job.objects.update(started_at=past(30))

    assert sweep() == {"requeued": 0, "failed": 0, "expired": 0, "timed_out": 0, "errors": 0}
    assert vlevel_api.post(f"/jobs/{job['jobId']}/state", {"currentNode": "x"}, **owner("w1")).status_code == 200


# --- 4. budgets -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_more_documents_than_max_docs_is_409(vlevel_api):
    job = vlevel_api.post("/jobs", envelope(constraints={"maxDocs": 5})).json()
    url = f"/jobs/{job['jobId']}/state"
    assert vlevel_api.post(url, {"budget": {"docsRetrieved": 5}}).status_code == 200

    refused = vlevel_api.post(url, {"currentNode": "x", "budget": {"docsRetrieved": 6}})

    assert refused.status_code == 409
    assert refused.json()["maxDocs"] == 5
    stored = Job.objects.get()
    assert (stored.budget["docsRetrieved"], stored.current_node) == (5, "start")


@pytest.mark.django_db
def test_spending_past_the_cost_budget_is_409(vlevel_api):
    job = vlevel_api.post("/jobs", envelope(constraints={"budget": 0.5})).json()
    url = f"/jobs/{job['jobId']}/state"
    assert vlevel_api.post(url, {"budget": {"costUsed": 0.4}}).json()["graphState"]["budget"]["costUsed"] == 0.4

    refused = vlevel_api.post(url, {"budget": {"costUsed": 0.51}})

    assert refused.status_code == 409
    assert refused.json()["budget"] == 0.5
    assert Job.objects.get().budget["costUsed"] == 0.4


@pytest.mark.django_db
def test_cost_without_a_budget_is_only_recorded(vlevel_api, job):
    response = vlevel_api.post(f"/jobs/{job['jobId']}/state", {"budget": {"costUsed": 12.5}})
    assert response.json()["graphState"]["budget"]["costUsed"] == 12.5
    assert vlevel_api.post(f"/jobs/{job['jobId']}/state", {"budget": {"costUsed": 1}}).status_code == 422


# --- 5. dryRun ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_tool_call_of_a_dry_run_job_is_recorded_as_dry(vlevel_api):
    job = vlevel_api.post("/jobs", envelope(constraints={"dryRun": True})).json()

    response = vlevel_api.post(SQL, {"jobId": job["jobId"], "permission": "read"})

    assert response.status_code == 201
    assert response.json()["dryRun"] is True
    assert ToolCall.objects.get().dry_run is True


@pytest.mark.django_db
def test_a_dry_call_of_a_gated_tool_opens_no_review_item(vlevel_api):
    job = vlevel_api.post("/jobs", envelope(constraints={"dryRun": True})).json()

    response = vlevel_api.post(SNAPSHOT, {"jobId": job["jobId"], "arguments": {"url": "https://shop.example.com/"}})

    assert response.status_code == 201
    assert response.json()["dryRun"] is True
    assert response.json()["grantId"] is None
    assert not ReviewItem.objects.exists()
    assert not ToolGrant.objects.exists()
    assert ToolCall.objects.get().dry_run is True


@pytest.mark.django_db
def test_calls_of_other_jobs_are_not_dry(vlevel_api, job):
    response = vlevel_api.post(SQL, {"jobId": job["jobId"]})
    assert response.json()["dryRun"] is False
    assert vlevel_api.post(SNAPSHOT, {"jobId": job["jobId"], "arguments": {}}).status_code == 202


# --- 7. a caller's idempotency key reused for other content ---------------------------------


@pytest.mark.django_db
def test_a_caller_key_reused_for_other_content_is_409(vlevel_api):
    first = vlevel_api.post("/jobs", envelope(idempotencyKey="nightly-2026-11-21"))

    reused = vlevel_api.post("/jobs", envelope(idempotencyKey="nightly-2026-11-21", payload={"urls": URLS[:1]}))

    assert first.status_code == 201
    assert reused.status_code == 409
    assert reused.json()["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert reused.json()["jobId"] == first.json()["jobId"]
    assert Job.objects.count() == 1
    validated = vlevel_api.post("/jobs/validate", envelope(idempotencyKey="nightly-2026-11-21", payload={"urls": []}))
    assert validated.status_code == 409
    other_constraints = envelope(idempotencyKey="nightly-2026-11-21", constraints={"maxTokens": 10})
    assert vlevel_api.post("/jobs", other_constraints).json()["code"] == "IDEMPOTENCY_KEY_REUSED"


@pytest.mark.django_db
def test_a_caller_key_with_the_same_content_replays_even_with_new_ids(vlevel_api):
    first = vlevel_api.post("/jobs", envelope(idempotencyKey="k1", jobId="3f1c4a52-6a1e-4b61-9d0e-0f2b1f7d9a11"))
    again = vlevel_api.post("/jobs", envelope(idempotencyKey="k1", jobId="4f1c4a52-6a1e-4b61-9d0e-0f2b1f7d9a12"))

    assert again.status_code == 200
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["jobId"] == first.json()["jobId"]


# --- the sweeper on a real beat and worker --------------------------------------------------


@pytest.mark.process
@pytest.mark.django_db(transaction=True)
@override_settings(JOB_LOCK_RETRY=1)
def test_beat_and_a_worker_sweep_a_dead_workers_job(tmp_path, vlevel):
    seed = importlib.import_module("agents.migrations.0005_job_liveness").forwards
    seed(apps, None)  # transactional tests start from a flushed database
    every_second, _ = IntervalSchedule.objects.get_or_create(every=1, period=IntervalSchedule.SECONDS)
    assert PeriodicTask.objects.filter(name="job sweeper", task="agents.sweep_jobs").update(interval=every_second)
    actor = Principal(agent=vlevel)
    job, _ = submission.submit_job(JobEnvelopeIn(**envelope()), actor=actor)
    job = leases.claim_lease(job, actor=actor, owner="dead-worker")
    Job.objects.update(attempts=1, lease_expires_at=past())

    child_env = process_env(tmp_path / "var", DATABASE_URL=database_url_of_tests(), JOB_LOCK_RETRY="1")
    log_path = tmp_path / "celery.log"
    with open(log_path, "w") as log:
        worker = _start(["worker", "--loglevel", "INFO", "--concurrency", "1"], child_env, log)
        beat = _start(["beat", "--loglevel", "INFO", "--max-interval", "1"], child_env, log)
        try:
            failed = wait_for(lambda: Job.objects.filter(pk=job.pk, status="failed").exists(), 90)
        finally:
            _stop(beat, worker)

    assert failed, log_path.read_text()[-4000:]
    run = TaskRun.objects.filter(task_name="agents.sweep_jobs", status="success").first()
    assert run is not None
    assert Escalation.objects.filter(job_id=job.pk).exists()
