"""KPI samples from job results (their reads over a time window: agents.querysets.KpiSampleQuerySet).

An agent does not write its own KPIs. What the platform measures from its jobs (success, processing
time, escalations: DERIVED_METRICS) is derived, whatever the result says; a figure the agent puts in
a result's ``metrics`` is kept beside it as a ``reported`` sample, shown as the agent's own, and
never judged in its place. A KPI the platform cannot measure has only the agent's figures, which
are then what it is judged on (its ``source`` says so).
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from agents.envelope import AgentOutput
from agents.kpi import DERIVED_DURATION_METRIC, DERIVED_ESCALATION_METRIC, DERIVED_SUCCESS_METRIC
from agents.models import Job, KpiSample, ManifestKpi
from agents.registry import manifest_kpis

# A duration KPI's unit, as manifests write it, in milliseconds (the seed's unit is milliseconds).
_UNIT_MS = {"milliseconds": 1.0, "ms": 1.0, "seconds": 1000.0, "s": 1000.0, "minutes": 60_000.0}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def record_samples(job: Job, output: AgentOutput, *, at: datetime, from_result: bool = True) -> list[KpiSample]:
    """The samples of one result, for the KPIs of the job's manifest. Derived, whatever the result
    says: `task_success_rate` from `success` (1 or 0, so its mean over a window is the success
    rate), `avg_processing_time` from the job's own clock (first start to this result, in the KPI's
    unit) and `escalation_rate` from whether the job has been escalated by now (1 or 0). A number
    the result's `metrics` give for a KPI is kept as a reported sample beside them. Work that never
    reported (``from_result=False``: the sweeper failed it) counts as a failure, but the time until
    it was given up is no processing time, so no duration is derived for it."""
    samples: list[KpiSample] = []
    for kpi in manifest_kpis(job.manifest_id):
        derived = _derived(kpi, job, output, at=at, from_result=from_result)
        claimed = _number(output.metrics.get(kpi.metric_id))
        samples.extend(
            KpiSample(agent=job.agent, metric_id=kpi.metric_id, value=value, recorded_at=at, job=job, reported=reported)
            for value, reported in ((derived, False), (claimed, True))
            if value is not None
        )
    return KpiSample.objects.bulk_create(samples)


def _derived(kpi: ManifestKpi, job: Job, output: AgentOutput, *, at: datetime, from_result: bool) -> float | None:
    """The platform's own measure of ``kpi`` for this result; None for a KPI it cannot measure."""
    if kpi.metric_id == DERIVED_SUCCESS_METRIC:
        return 1.0 if output.success else 0.0
    if kpi.metric_id == DERIVED_ESCALATION_METRIC:
        return 1.0 if job.escalations.exists() else 0.0
    if kpi.metric_id == DERIVED_DURATION_METRIC and from_result and job.started_at is not None:
        elapsed_ms = (at - job.started_at).total_seconds() * 1000
        return round(elapsed_ms / _UNIT_MS.get(kpi.unit.strip().lower(), 1.0), 3)
    return None
