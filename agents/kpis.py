"""KPI samples from job results, and KPI reports over a time window.

An agent does not write its own KPIs. What the platform measures from its jobs (success, processing
time, escalations: DERIVED_METRICS) is derived, whatever the result says; a figure the agent puts in
a result's ``metrics`` is kept beside it as a ``reported`` sample, shown as the agent's own, and
never judged in its place. A KPI the platform cannot measure has only the agent's figures, which
are then what it is judged on (its ``source`` says so).
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Avg, Q
from django.db.models.functions import TruncDate
from django.utils import timezone

from agents.envelope import AgentOutput
from agents.kpi import kpi_status, worst
from agents.models import Agent, Job, KpiSample, ManifestKpi
from agents.registry import manifest_kpis

DERIVED_SUCCESS_METRIC = "task_success_rate"
DERIVED_DURATION_METRIC = "avg_processing_time"
DERIVED_ESCALATION_METRIC = "escalation_rate"
DERIVED_METRICS = frozenset({DERIVED_SUCCESS_METRIC, DERIVED_DURATION_METRIC, DERIVED_ESCALATION_METRIC})
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


def _judged() -> Q:
    """The samples a KPI is judged on: the platform's own for a KPI it derives, and for one it
    cannot measure, the agent's (its only figures)."""
    return Q(reported=False) | ~Q(metric_id__in=DERIVED_METRICS)


def averages(
    agent_ids: list[int], since: datetime, *, metric_ids: set[str] | None = None, reported: bool = False
) -> dict[tuple[int, str], float]:
    """Mean sample per (agent, metric) since ``since``: what KPI statuses are judged on; with
    ``reported``, the mean of what the agent itself reported instead."""
    samples = KpiSample.objects.filter(agent_id__in=agent_ids, recorded_at__gte=since)
    samples = samples.filter(reported=True) if reported else samples.filter(_judged())
    if metric_ids is not None:
        samples = samples.filter(metric_id__in=metric_ids)
    rows = samples.values_list("agent_id", "metric_id").annotate(mean=Avg("value"))
    return {(agent_id, metric_id): mean for agent_id, metric_id, mean in rows}


def report(agent: Agent, window_days: int) -> list[dict[str, Any]]:
    """Each KPI of the active manifest with its mean over the window and its status, where that
    mean comes from (``source``: derived by the platform, or reported by the agent for a KPI the
    platform cannot measure) and the mean of what the agent reported (``reported``)."""
    if agent.active_manifest_id is None:
        return []
    since = timezone.now() - timedelta(days=window_days)
    means = averages([agent.pk], since)
    claims = averages([agent.pk], since, reported=True)
    items = []
    for kpi in agent.active_manifest.kpis.all():
        current = means.get((agent.pk, kpi.metric_id))
        items.append(
            {
                "metric_id": kpi.metric_id,
                "target": kpi.target,
                "threshold_warning": kpi.threshold_warning,
                "threshold_critical": kpi.threshold_critical,
                "unit": kpi.unit,
                "direction": kpi.direction,
                "current": current,
                "status": kpi_status(current, kpi.threshold_warning, kpi.threshold_critical, kpi.direction),
                "source": "derived" if kpi.metric_id in DERIVED_METRICS else "reported",
                "reported": claims.get((agent.pk, kpi.metric_id)),
            }
        )
    return items


def trend(agent: Agent, metric_id: str, days: int) -> list[tuple[str, float]]:
    """Daily means of the samples the KPI is judged on, oldest first, for the trend chart."""
    since = timezone.now() - timedelta(days=days)
    rows = (
        KpiSample.objects.filter(_judged(), agent=agent, metric_id=metric_id, recorded_at__gte=since)
        .annotate(day=TruncDate("recorded_at"))
        .values_list("day")
        .annotate(mean=Avg("value"))
        .order_by("day")
    )
    return [(day.isoformat(), mean) for day, mean in rows]


def worst_statuses(agents: list[Agent], window_days: int) -> dict[int, str]:
    """The worst KPI status of each agent, in two queries for the whole fleet."""
    since = timezone.now() - timedelta(days=window_days)
    means = averages([a.pk for a in agents], since)
    statuses: dict[int, list[str]] = {a.pk: [] for a in agents}
    manifest_owner = {a.active_manifest_id: a.pk for a in agents if a.active_manifest_id}
    for kpi in ManifestKpi.objects.filter(manifest_id__in=manifest_owner):
        agent_id = manifest_owner[kpi.manifest_id]
        current = means.get((agent_id, kpi.metric_id))
        statuses[agent_id].append(kpi_status(current, kpi.threshold_warning, kpi.threshold_critical, kpi.direction))
    return {agent_id: worst(found) for agent_id, found in statuses.items()}
