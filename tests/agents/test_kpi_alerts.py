"""A KPI turning critical opens one inbox item per agent and metric until it recovers (seed 001
KPIs that act), whether the samples come from results or from work that never reported."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from agents.jobs.sweep import sweep
from agents.models import Job, KpiAlert
from governance.reviews.models import ReviewItem
from tests.factories.governance import UserFactory
from tests.support.jobs import finish_job, submit_job
from tests.support.manifests import load

GOOD = {
    "success": True,
    "data": {"scores": [{"url": "https://shop.test/a", "level": "V2"}], "recommendations": []},
    "confidence": 0.9,
}
BAD = {"success": False, "nextAction": "complete"}


def run(agent, output: dict, n: int = 1) -> None:
    for _ in range(n):
        finish_job(_fresh(agent), output)


def _fresh(agent) -> Job:
    return submit_job(agent, {"urls": [f"https://shop.test/{Job.objects.count()}"]})


def kpi_items() -> list[ReviewItem]:
    return list(ReviewItem.objects.filter(kind="kpi_critical").order_by("pk"))


@pytest.mark.django_db
def test_a_critical_kpi_opens_one_item_until_it_recovers_then_again(vlevel):
    run(vlevel, BAD)  # success rate 0.0: critical (<= 0.70)
    run(vlevel, BAD)

    (first,) = kpi_items()
    assert first.title == "KPI task_success_rate of agent.seo.vlevel is critical"
    assert (first.payload["current"], first.payload["thresholdCritical"]) == (0.0, 0.7)
    alert = KpiAlert.objects.get()
    assert (alert.metric_id, alert.resolved_at) == ("task_success_rate", None)

    run(vlevel, GOOD, n=5)  # 5 of 7: 0.714, above critical: recovered

    alert.refresh_from_db()
    assert alert.resolved_at is not None
    assert round(alert.resolved_value, 3) == 0.714
    first.refresh_from_db()
    assert first.status == "expired"  # nobody had looked: withdrawn, with why
    assert "recovered" in first.decision.comment

    run(vlevel, BAD, n=2)  # 5 of 9: critical again

    assert len(kpi_items()) == 2
    assert KpiAlert.objects.filter(resolved_at__isnull=True).count() == 1


@pytest.mark.django_db
def test_work_that_never_reports_counts_as_a_failure_and_can_turn_the_kpi_critical(vlevel):
    job = _fresh(vlevel)
    Job.objects.filter(pk=job.pk).update(
        status="running",
        started_at=timezone.now() - timedelta(minutes=1),
        attempts=settings.JOB_LOCK_RETRY,
        lease_owner="gone",
        lease_expires_at=timezone.now() - timedelta(seconds=1),
    )

    assert sweep()["failed"] == 1

    assert [item.payload["metric"] for item in kpi_items()] == ["task_success_rate"]
    assert job.escalations.exists()  # and the manifest's escalation fired (seed 001 G5)


@pytest.mark.django_db(transaction=True)
def test_results_turning_it_critical_at_once_open_one_item():
    vlevel = load("agent.seo.vlevel")
    batch = [_fresh(vlevel) for _ in range(4)]
    start = threading.Barrier(len(batch))

    def report(job: Job) -> None:
        start.wait()
        try:
            finish_job(job, BAD)
        finally:
            connection.close()

    threads = [threading.Thread(target=report, args=(job,)) for job in batch]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(kpi_items()) == 1
    assert KpiAlert.objects.count() == 1


@pytest.mark.django_db
def test_the_inbox_shows_the_kpi_with_its_trend_chart_linked_and_a_reviewer_acknowledges_it(client, vlevel):
    run(vlevel, BAD)
    client.force_login(UserFactory(username="rita", roles=["Reviewer"]))

    page = client.get(reverse("reviews:inbox")).content.decode()

    assert "KPI critical" in page
    assert f'href="/agents/agent.seo.vlevel/?window={settings.KPI_WINDOW_DAYS}#kpi-task_success_rate"' in page
    assert "Acknowledge" in page
    agent_page = client.get("/agents/agent.seo.vlevel/").content.decode()
    assert 'id="kpi-task_success_rate"' in agent_page


@pytest.mark.django_db
def test_an_alert_resolves_when_its_window_slides_past_the_bad_days_without_new_results(vlevel):
    from agents import kpi_alerts
    from agents.models import KpiSample

    run(vlevel, BAD)
    KpiSample.objects.update(recorded_at=timezone.now() - timedelta(days=settings.KPI_WINDOW_DAYS + 1))
    KpiSample.objects.create(agent=vlevel, metric_id="task_success_rate", value=1.0, recorded_at=timezone.now())

    assert kpi_alerts.recheck_open() == {"agents": 1, "open_before": 1, "open_after": 0, "errors": 0}
    assert KpiAlert.objects.get().resolved_value == 1.0
