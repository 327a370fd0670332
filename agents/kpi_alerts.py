"""KPIs that act: a KPI turning critical puts one item in the reviewer inbox.

Checked each time samples are recorded (a job's result, or the sweeper failing a job that never
reported), for the metrics just sampled: their mean over KPI_WINDOW_DAYS is judged against the
manifest's thresholds, as the agent page judges it. Critical with no open alert opens one (a
``KpiAlert`` and an inbox item linking to the trend chart); back to warning or ok resolves it,
withdrawing the item if nobody has looked at it yet. The constraint on open alerts makes "once
per agent and metric until it recovers" hold under concurrent results too.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from agents.kpi import kpi_status
from agents.models import Agent, Job, KpiAlert, KpiSample, ManifestKpi
from agents.registry import manifest_kpis
from governance.kernel.audit import AuditAction
from governance.kernel.periodic import Failures
from governance.kernel.principals import SYSTEM
from governance.kernel.services import record
from governance.notifications import services as notifications
from governance.notifications.models import EventKind
from governance.reviews import services as reviews
from governance.reviews.kinds import APPROVE, Control, ReviewKind, always
from governance.reviews.models import ReviewDecision, ReviewItem

REVIEW_KIND = "kpi_critical"
CRITICAL = "critical"


def check(job: Job, samples: list[KpiSample], *, at: datetime) -> list[KpiAlert]:
    """Open or resolve the alerts of the metrics ``samples`` measured, under the job's manifest;
    returns those opened."""
    sampled = {sample.metric_id for sample in samples}
    return judge(job.agent, job.manifest_id, metric_ids=sampled, at=at, job=job) if sampled else []


def judge(
    agent: Agent, manifest_id: int, *, metric_ids: set[str] | None = None, at: datetime, job: Job | None = None
) -> list[KpiAlert]:
    """Judge the agent's KPIs under ``manifest_id`` (only ``metric_ids`` when given) as the agent
    page does, opening or resolving their alerts; returns those opened."""
    window = settings.KPI_WINDOW_DAYS
    kpis = [kpi for kpi in manifest_kpis(manifest_id) if metric_ids is None or kpi.metric_id in metric_ids]
    means = KpiSample.objects.averages([agent.pk], at - timedelta(days=window), metric_ids=metric_ids)
    open_alerts = {a.metric_id: a for a in KpiAlert.objects.filter(agent=agent, resolved_at__isnull=True)}
    opened = []
    for kpi in kpis:
        current = means.get((agent.pk, kpi.metric_id))
        if current is None:
            continue
        status = kpi_status(current, kpi.threshold_warning, kpi.threshold_critical, kpi.direction)
        alert = open_alerts.get(kpi.metric_id)
        if status == CRITICAL and alert is None:
            created = _open(agent, kpi, current, window, at, job)
            if created is not None:
                opened.append(created)
        elif status != CRITICAL and alert is not None:
            _resolve(alert, current, at)
    return opened


def recheck_open(*, at: datetime | None = None) -> dict[str, Any]:
    """Beat task body: re-judge the agents with an open alert. Their window slides even when no
    result comes (an agent that stopped working), and a KPI that recovered that way resolves. An
    agent whose judging raises is reported under ``errors``; the others are judged all the same."""
    at = at or timezone.now()
    agent_ids = KpiAlert.objects.filter(resolved_at__isnull=True).values("agent_id")
    agents = Agent.objects.filter(pk__in=agent_ids, active_manifest__isnull=False)
    before = KpiAlert.objects.filter(resolved_at__isnull=True).count()
    failures = Failures("kpi_alerts")
    for agent in agents:
        with failures.guard(f"agent {agent.agent_id}"):
            judge(agent, agent.active_manifest_id, at=at)
    after = KpiAlert.objects.filter(resolved_at__isnull=True).count()
    return {"agents": len(agents), "open_before": before, "open_after": after, **failures.as_dict()}


def _open(
    agent: Agent, kpi: ManifestKpi, current: float, window: int, at: datetime, job: Job | None
) -> KpiAlert | None:
    metric_id, threshold = kpi.metric_id, kpi.threshold_critical
    try:
        with transaction.atomic():
            alert = KpiAlert.objects.create(
                agent=agent, metric_id=metric_id, opened_at=at, value=current, threshold_critical=threshold
            )
    except IntegrityError:  # a concurrent result opened it first: the inbox hears once
        return None
    alert.review_item = reviews.open_item(
        actor=SYSTEM,
        kind=REVIEW_KIND,
        title=f"KPI {metric_id} of {agent.agent_id} is critical",
        agent=agent,
        payload={
            "alert": alert.pk,
            "metric": metric_id,
            "current": current,
            "thresholdCritical": threshold,
            "unit": kpi.unit,
            "windowDays": window,
            "job": str(job.job_id) if job is not None else None,
        },
    )
    alert.save(update_fields=["review_item"])
    record(actor=SYSTEM, action=AuditAction.KPI_ALERT_OPENED, target=alert, metric=metric_id, value=current)
    notifications.announce(
        EventKind.KPI_CRITICAL,
        agent=agent.agent_id,
        domain=agent.domain,
        title=f"KPI {metric_id} of {agent.agent_id} is critical",
        link_path=reverse("agents:agent-detail", args=[agent.agent_id]),
        facts={"metric": metric_id, "mean": f"{current:g} {kpi.unit}".strip(), "critical at": f"{threshold:g}"},
    )
    return alert


def _resolve(alert: KpiAlert, current: float, at: datetime) -> None:
    alert.resolved_at, alert.resolved_value = at, current
    alert.save(update_fields=["resolved_at", "resolved_value"])
    record(actor=SYSTEM, action=AuditAction.KPI_ALERT_RESOLVED, target=alert, metric=alert.metric_id, value=current)
    item = alert.review_item
    if item is not None and item.status == ReviewItem.Status.PENDING:
        why = f"{alert.metric_id} recovered ({current:g}) before anyone decided."
        reviews.decide(item.pk, actor=SYSTEM, decision=ReviewDecision.Decision.EXPIRE, comment=why, notify=False)


# Acknowledged, nothing more: the alert closes itself when the KPI recovers (``_resolve``). It
# announces itself as EventKind.KPI_CRITICAL, with its own link, so the inbox does not tell it twice.
REVIEW = ReviewKind(
    code=REVIEW_KIND,
    label="KPI critical",
    template="agents/review_kinds/kpi_critical.html",
    controls=always(Control(APPROVE, "Acknowledge", "approve")),
)
