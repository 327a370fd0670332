"""A job's life after submission: lease, GraphState, result, retries and artifacts."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from agents.models import Job, KpiSample
from tests.agents.test_jobs import envelope
from tests.support.api import Api
from tests.support.keys import issue_key


@pytest.fixture
def job(vlevel_api) -> dict:
    return vlevel_api.post("/jobs", envelope()).json()


def result(**changes) -> dict:
    body = {
        "success": True,
        "data": {
            "scores": [{"url": "https://shop.test/a", "level": "V2"}, {"url": "https://shop.test/b", "level": "V3"}],
            "recommendations": [],
        },
        "metrics": {"avg_processing_time": 4200},
        "nextAction": "complete",
        "confidence": 0.9,
        "error_count": 0,
    }
    body.update(changes)
    return body


@pytest.mark.django_db
def test_a_lease_is_taken_renewed_and_refused_to_others(vlevel_api, job):
    url = f"/jobs/{job['jobId']}/lease"

    taken = vlevel_api.post(url, {"owner": "worker-1"}).json()
    assert taken["status"] == "running"
    assert taken["lease"]["owner"] == "worker-1"
    assert taken["lease"]["attempts"] == 1

    assert vlevel_api.post(url, {"owner": "worker-1", "ttlSeconds": 600}).json()["lease"]["attempts"] == 1
    refused = vlevel_api.post(url, {"owner": "worker-2"})
    assert refused.status_code == 409
    assert refused.json()["leaseOwner"] == "worker-1"


@pytest.mark.django_db
def test_an_expired_lease_is_taken_over_as_a_new_attempt(vlevel_api, job):
    url = f"/jobs/{job['jobId']}/lease"
    vlevel_api.post(url, {"owner": "worker-1"})
    Job.objects.update(lease_expires_at=timezone.now() - timedelta(seconds=1))

    taken = vlevel_api.post(url, {"owner": "worker-2"}).json()

    assert taken["lease"]["owner"] == "worker-2"
    assert taken["lease"]["attempts"] == 2


@pytest.mark.django_db
def test_no_more_attempts_than_lock_retry(vlevel_api, job):
    url = f"/jobs/{job['jobId']}/lease"
    for n in range(3):
        assert vlevel_api.post(url, {"owner": f"w{n}"}).status_code == 200
        Job.objects.update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert vlevel_api.post(url, {"owner": "w3"}).status_code == 409


@pytest.mark.django_db
def test_graph_state_moves_and_keeps_its_path(vlevel_api, job):
    url = f"/jobs/{job['jobId']}/state"
    vlevel_api.post(url, {"currentNode": "fetch", "budget": {"tokensUsed": 1200, "apiCalls": 3}})
    state = vlevel_api.post(
        url,
        {
            "currentNode": "score",
            "intermediate": {"fetched": 2},
            "errors": [{"node": "fetch", "message": "timeout on b", "recoverable": True}],
            "budget": {"tokensUsed": 3000},
        },
    ).json()

    graph = state["graphState"]
    assert graph["currentNode"] == "score"
    assert graph["visitedNodes"] == ["fetch", "score"]
    assert graph["intermediate"] == {"fetched": 2}
    assert graph["budget"] == {"tokensUsed": 3000, "tokensRemaining": 1000, "docsRetrieved": 0, "apiCalls": 3}
    assert graph["errors"][0]["node"] == "fetch"
    assert graph["errors"][0]["timestamp"]
    assert state["status"] == "running"


@pytest.mark.django_db
def test_the_token_budget_cannot_go_below_zero(vlevel_api, job):
    url = f"/jobs/{job['jobId']}/state"
    vlevel_api.post(url, {"currentNode": "fetch", "budget": {"tokensUsed": 3900}})

    refused = vlevel_api.post(url, {"currentNode": "score", "budget": {"tokensUsed": 4001}})

    assert refused.status_code == 409
    stored = Job.objects.get()
    assert stored.budget["tokensUsed"] == 3900
    assert stored.current_node == "fetch"


@pytest.mark.django_db
def test_usage_totals_never_go_down(vlevel_api, job):
    url = f"/jobs/{job['jobId']}/state"
    vlevel_api.post(url, {"budget": {"tokensUsed": 100}})
    response = vlevel_api.post(url, {"budget": {"tokensUsed": 50}})
    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["body", "budget", "tokensUsed"]


@pytest.mark.django_db
def test_a_result_checks_post_conditions_records_kpis_and_finishes(vlevel_api, job):
    response = vlevel_api.post(f"/jobs/{job['jobId']}/result", result())

    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "succeeded"
    assert body["postConditions"][0] == {
        "expression": "scores.length === urls.length",
        "error_code": "SCORE_MISMATCH",
        "passed": True,
        "error": None,
    }
    outputs = body["postConditions"][1:]  # then each declared output's check (R2), through the named schemas
    assert [(r["output"], r["passed"], r.get("unchecked")) for r in outputs] == [
        ("scores", True, None),
        ("recommendations", True, None),
    ]
    assert body["escalation"] is None
    samples = dict(KpiSample.objects.values_list("metric_id", "value"))
    assert samples == {"avg_processing_time": 4200.0, "task_success_rate": 1.0}


@pytest.mark.django_db
def test_a_failed_post_condition_is_recorded_with_its_error_code(vlevel_api, job):
    vlevel_api.post(f"/jobs/{job['jobId']}/lease", {})
    Job.objects.update(attempts=3)  # the last attempt
    body = vlevel_api.post(f"/jobs/{job['jobId']}/result", result(data={"scores": [], "recommendations": []})).json()

    assert body["status"] == "failed"
    assert body["postConditions"][0]["passed"] is False
    assert body["postConditions"][0]["error_code"] == "SCORE_MISMATCH"
    assert KpiSample.objects.get(metric_id="task_success_rate").value == 1.0  # the agent reported success


@pytest.mark.django_db
@override_settings(JOB_RETRY_BASE_SECONDS=30, JOB_LOCK_BACKOFF="exponential")
def test_a_failure_with_attempts_left_is_retried_with_backoff(vlevel_api, job):
    url = f"/jobs/{job['jobId']}/lease"
    vlevel_api.post(url, {"owner": "w1"})
    before = timezone.now()

    body = vlevel_api.post(f"/jobs/{job['jobId']}/result", result(success=False, data=None), HTTP_X_LEASE_OWNER="w1")

    assert body.json()["status"] == "queued"
    stored = Job.objects.get()
    assert timedelta(seconds=29) < stored.next_attempt_at - before < timedelta(seconds=32)
    assert stored.lease_owner == ""
    assert vlevel_api.post(url, {"owner": "w2"}).status_code == 409  # not before the backoff
    Job.objects.update(next_attempt_at=timezone.now() - timedelta(seconds=1))
    assert vlevel_api.post(url, {"owner": "w2"}).json()["lease"]["attempts"] == 2


@pytest.mark.django_db
def test_a_finished_job_takes_no_more_changes(vlevel_api, job):
    vlevel_api.post(f"/jobs/{job['jobId']}/result", result())

    assert vlevel_api.post(f"/jobs/{job['jobId']}/result", result()).status_code == 409
    assert vlevel_api.post(f"/jobs/{job['jobId']}/state", {"currentNode": "x"}).status_code == 409
    assert vlevel_api.post(f"/jobs/{job['jobId']}/lease", {}).status_code == 409


@pytest.mark.django_db
def test_a_finished_job_has_its_three_artifacts(vlevel_api, viewer_api, job):
    vlevel_api.post(f"/jobs/{job['jobId']}/state", {"currentNode": "fetch"})
    vlevel_api.post(f"/jobs/{job['jobId']}/state", {"currentNode": "score"})
    vlevel_api.post(f"/jobs/{job['jobId']}/result", result())

    listed = vlevel_api.get(f"/jobs/{job['jobId']}").json()["artifacts"]
    names = sorted(a["name"] for a in listed)
    assert [n.split(".")[-2:] for n in names] == [["audit", "md"], ["backlog", "json"], ["graph", "json"]]
    assert all(n.startswith("agent.seo.vlevel.") for n in names)

    audit = viewer_api.get(f"/jobs/{job['jobId']}/artifacts/audit")
    assert audit.status_code == 200
    assert audit["Content-Disposition"].endswith('.audit.md"')
    text = audit.content.decode()
    assert "**succeeded**" in text
    assert "`scores.length === urls.length`: pass" in text
    assert "fetch → score" in text
    graph = json.loads(vlevel_api.get(f"/jobs/{job['jobId']}/artifacts/graph").content)
    assert graph["edges"] == [["fetch", "score"]]
    backlog = json.loads(vlevel_api.get(f"/jobs/{job['jobId']}/artifacts/backlog").content)
    assert backlog["items"] == []


@pytest.mark.django_db
def test_artifacts_do_not_exist_before_the_end(vlevel_api, job):
    assert vlevel_api.get(f"/jobs/{job['jobId']}/artifacts/audit").status_code == 404


@pytest.mark.django_db
def test_only_the_owner_agent_changes_its_job(client, job, architect, admin_api):
    other = Api(client, issue_key(agent=architect))
    assert other.post(f"/jobs/{job['jobId']}/result", result()).status_code == 403
    assert admin_api.post(f"/jobs/{job['jobId']}/result", result()).status_code == 403
    assert Job.objects.get().status == "queued"


@pytest.mark.django_db
def test_audit_md_names_who_asked_in_what_role_and_the_artifacts_the_agent_reported(vlevel, vlevel_api):
    from tests.support.jobs import finish_job, submit_job

    job = submit_job(
        vlevel,
        {"urls": ["https://shop.test/a"]},
        context={"source": "manual", "userId": "u-42", "seoRole": "pillar"},
    )
    output = {
        "success": True,
        "data": {"scores": [{"url": "https://shop.test/a", "level": "V2"}], "recommendations": []},
        "confidence": 0.9,
        "artifacts": [{"name": "report.pdf", "type": "application/pdf", "uri": "s3://audits/report.pdf"}],
    }
    finish_job(job, output)

    text = vlevel_api.get(f"/jobs/{job.job_id}/artifacts/audit").content.decode()

    request = text.split("## Request\n")[1].split("\n\n")[0]
    assert "- Requested by (userId): u-42" in request
    assert "- SEO role (seoRole): pillar" in request
    assert "## Artifacts reported by the agent\n- report.pdf (application/pdf): s3://audits/report.pdf" in text


@pytest.mark.django_db
def test_the_seo_role_joins_the_query_memory_is_searched_with(vlevel):
    from memory.rag import where
    from tests.support.jobs import submit_job

    job = submit_job(vlevel, {"urls": ["https://shop.test/a"]}, context={"source": "manual", "seoRole": "pillar"})

    assert where(job)["query_text"].startswith("seo_audit pillar {")
