"""GET /api/v1/agents/{agent_id}/kpis: each KPI's value over a window and its status."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agents.kpi import kpi_status
from agents.models import KpiSample

SCORED = {"scores": [{"url": "https://example.com/a", "level": "V1"}], "recommendations": []}


def samples(agent, metric_id: str, values: list[float], days_ago: float = 0) -> None:
    at = timezone.now() - timedelta(days=days_ago)
    KpiSample.objects.bulk_create(KpiSample(agent=agent, metric_id=metric_id, value=v, recorded_at=at) for v in values)


def by_metric(response) -> dict:
    return {item["metric_id"]: item for item in response.json()["items"]}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.97, "ok"),
        (0.9, "ok"),
        (0.85, "warning"),
        (0.8, "warning"),
        (0.7, "critical"),
        (0.2, "critical"),
        (None, "no_data"),
    ],
)
def test_higher_is_better_status(value, expected):
    assert kpi_status(value, 0.85, 0.70, "higher_is_better") == expected


@pytest.mark.parametrize(
    ("value", "expected"), [(4000, "ok"), (9999, "ok"), (10000, "warning"), (29999, "warning"), (30000, "critical")]
)
def test_lower_is_better_status(value, expected):
    assert kpi_status(value, 10000, 30000, "lower_is_better") == expected


@pytest.mark.django_db
def test_the_report_uses_the_window_mean(vlevel_api, vlevel):
    samples(vlevel, "task_success_rate", [1, 1, 1, 0])  # 0.75: warning
    samples(vlevel, "avg_processing_time", [40000], days_ago=10)  # outside the default 7 days
    samples(vlevel, "avg_processing_time", [3000, 5000])

    response = vlevel_api.get("/agents/agent.seo.vlevel/kpis")

    assert response.status_code == 200
    kpis = by_metric(response)
    assert kpis["task_success_rate"]["current"] == 0.75
    assert kpis["task_success_rate"]["status"] == "warning"
    assert kpis["task_success_rate"]["target"] == 0.95
    assert kpis["task_success_rate"]["unit"] == "percentage"
    assert kpis["avg_processing_time"]["current"] == 4000
    assert kpis["avg_processing_time"]["status"] == "ok"
    wide = by_metric(vlevel_api.get("/agents/agent.seo.vlevel/kpis", {"window_days": 30}))
    assert wide["avg_processing_time"]["current"] == 16000
    assert wide["avg_processing_time"]["status"] == "warning"


@pytest.mark.django_db
def test_no_samples_is_no_data(vlevel_api):
    assert {item["status"] for item in vlevel_api.get("/agents/agent.seo.vlevel/kpis").json()["items"]} == {"no_data"}


@pytest.mark.django_db
def test_results_feed_the_report(vlevel_api):
    from tests.agents.test_job_lifecycle import result
    from tests.agents.test_jobs import envelope

    for n, success in enumerate([True, True, False]):
        job = vlevel_api.post("/jobs", envelope(payload={"urls": [f"https://e.com/{n}"]})).json()
        from agents.models import Job

        vlevel_api.post(f"/jobs/{job['jobId']}/lease", {})
        Job.objects.filter(pk=job["jobId"]).update(attempts=3)  # no retry: the failure counts now
        vlevel_api.post(f"/jobs/{job['jobId']}/result", result(success=success, data=SCORED))

    kpis = by_metric(vlevel_api.get("/agents/agent.seo.vlevel/kpis"))
    assert kpis["task_success_rate"]["current"] == pytest.approx(2 / 3)
    assert kpis["task_success_rate"]["status"] == "critical"


@pytest.mark.django_db
def test_access_and_bad_windows(other_agent_api, viewer_api, vlevel_api, vlevel):
    assert other_agent_api.get("/agents/agent.seo.vlevel/kpis").status_code == 404  # as an unknown agent
    assert viewer_api.get("/agents/agent.seo.vlevel/kpis").status_code == 200
    bad = vlevel_api.get("/agents/agent.seo.vlevel/kpis", {"window_days": 0})
    assert bad.status_code == 422
    assert bad.json()["errors"][0]["loc"] == ["query", "window_days"]


@pytest.mark.django_db
def test_a_result_without_a_processing_time_is_timed_by_the_jobs_own_clock(vlevel_api):
    from agents.models import Job
    from tests.agents.test_job_lifecycle import result
    from tests.agents.test_jobs import envelope

    job = vlevel_api.post("/jobs", envelope(payload={"urls": ["https://e.com/1"]})).json()
    vlevel_api.post(f"/jobs/{job['jobId']}/lease", {})
    Job.objects.filter(pk=job["jobId"]).update(started_at=timezone.now() - timedelta(seconds=7))
    unreported = result(data=SCORED)
    del unreported["metrics"]["avg_processing_time"]

    vlevel_api.post(f"/jobs/{job['jobId']}/result", unreported)

    sample = KpiSample.objects.get(metric_id="avg_processing_time")
    assert 7000 <= sample.value < 8000  # milliseconds, the manifest's unit
    assert str(sample.job_id) == job["jobId"]


@pytest.mark.django_db
def test_a_reported_processing_time_is_kept_as_reported(vlevel_api):
    from tests.agents.test_job_lifecycle import result
    from tests.agents.test_jobs import envelope

    job = vlevel_api.post("/jobs", envelope(payload={"urls": ["https://e.com/1"]})).json()
    vlevel_api.post(f"/jobs/{job['jobId']}/lease", {})

    vlevel_api.post(f"/jobs/{job['jobId']}/result", result(data=SCORED))

    assert KpiSample.objects.get(metric_id="avg_processing_time", reported=True).value == 4200
    derived = KpiSample.objects.get(metric_id="avg_processing_time", reported=False).value
    assert derived < 4200  # the job's own clock: the claim is kept beside it, not in its place
    kpi = by_metric(vlevel_api.get("/agents/agent.seo.vlevel/kpis"))["avg_processing_time"]
    assert (kpi["current"], kpi["reported"], kpi["source"]) == (derived, 4200, "derived")
