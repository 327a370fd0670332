"""Migration 0014 on samples of an earlier release, where a number in a result's `metrics` was stored
as the KPI's sample in place of the derived one: those samples are flagged as reported (and leave the
judged means); the platform's own samples stay derived."""

from __future__ import annotations

import pytest
from django.utils import timezone

from agents.models import Job
from tests.support.jobs import submit_job
from tests.support.migrations import back_at, migrate

BEFORE = [("agents", "0013_tool_call_age")]
AFTER = [("agents", "0014_kpi_sample_reported")]


@pytest.mark.django_db(transaction=True)
def test_the_samples_an_agent_reported_itself_are_flagged_reported(vlevel):
    job = submit_job(vlevel, {"urls": ["https://example.com/"]})
    Job.objects.filter(pk=job.pk).update(output={"success": False, "metrics": {"task_success_rate": 1.0}})
    now = timezone.now()

    with back_at(BEFORE) as old:
        samples = old.get_model("agents", "KpiSample").objects
        of_the_job = {"agent_id": vlevel.pk, "recorded_at": now, "job_id": job.pk}
        claimed = samples.create(metric_id="task_success_rate", value=1.0, **of_the_job)
        timed = samples.create(metric_id="avg_processing_time", value=800, **of_the_job)
        seeded = samples.create(agent_id=vlevel.pk, metric_id="task_success_rate", value=0.9, recorded_at=now)

        new = migrate(AFTER)

    flags = dict(new.get_model("agents", "KpiSample").objects.values_list("pk", "reported"))
    assert flags == {claimed.pk: True, timed.pk: False, seeded.pk: False}
