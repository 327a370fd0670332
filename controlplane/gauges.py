"""What the tables say, read at each scrape of /metrics (governance/kernel/metrics.py).

Every figure is the database's own, read by an aggregate that an index answers or that runs over
a small set: jobs not finished yet, sessions not completed, the pending inbox, open KPI alerts,
learnings by scope, rows without a vector. Tables too big to count at each scrape (tool calls,
finished jobs, contract checks: ten million rows, whose daily aggregates alone reach a million
rows a year) are counted as they are written instead (``metrics.count_on_commit``).

It lives in the project package, the layer that may read every app's tables; the kernel only
knows it as a registered source.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from django.db.models import Count, Min
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from agents.models import Job, KpiAlert
from governance.kernel import health
from governance.kernel.metrics import PREFIX
from governance.reviews.models import ReviewItem
from memory import indexing
from memory.models import Learning
from sessions.machine import Phase
from sessions.models import AISession

OPEN_JOBS = (Job.Status.QUEUED, Job.Status.RUNNING)


def collect() -> Iterator[Metric]:
    yield from jobs()
    yield from sessions()
    yield from inbox()
    yield from kpi_alerts()
    yield from learnings()
    yield from embedding_backlog()
    yield from heartbeat()


def jobs() -> Iterator[Metric]:
    """Jobs queued or running, by agent and status (the job_status index); finished ones are the
    counter governance_jobs_finished_total."""
    family = GaugeMetricFamily(
        f"{PREFIX}jobs", "Jobs queued or running, by agent and status", labels=["agent", "status"]
    )
    rows = (
        Job.objects.filter(status__in=OPEN_JOBS)
        .order_by()
        .values_list("agent__agent_id", "status")
        .annotate(n=Count("*"))
    )
    for agent, status, n in rows:
        family.add_metric([agent, status], n)
    yield family


def sessions() -> Iterator[Metric]:
    """Sessions not completed, by phase and whether they hold their agent's slot (completed ones
    are history; the time spent in each phase is the histogram governance_session_phase_seconds)."""
    family = GaugeMetricFamily(
        f"{PREFIX}sessions", "Sessions not completed, by phase and activity", labels=["phase", "active"]
    )
    rows = (
        AISession.objects.exclude(phase=Phase.COMPLETED.value)
        .order_by()
        .values_list("phase", "is_active")
        .annotate(n=Count("*"))
    )
    for phase, active, n in rows:
        family.add_metric([phase, "true" if active else "false"], n)
    yield family


def inbox() -> Iterator[Metric]:
    pending = GaugeMetricFamily(
        f"{PREFIX}inbox_pending", "Inbox items waiting for a decision, by kind", labels=["kind"]
    )
    oldest = GaugeMetricFamily(
        f"{PREFIX}inbox_oldest_pending_age_seconds", "Age of the oldest pending inbox item, by kind", labels=["kind"]
    )
    now = timezone.now()
    rows = (
        ReviewItem.objects.filter(status=ReviewItem.Status.PENDING)
        .order_by()
        .values_list("kind")
        .annotate(n=Count("*"), first=Min("created_at"))
    )
    for kind, n, first in rows:
        pending.add_metric([kind], n)
        oldest.add_metric([kind], (now - first).total_seconds())
    yield pending
    yield oldest


def kpi_alerts() -> Iterator[Metric]:
    """One series per KPI that is critical now (an open KpiAlert, kind kpi_critical in the inbox)."""
    family = GaugeMetricFamily(
        f"{PREFIX}kpi_critical", "KPIs whose window mean is past the critical threshold", labels=["agent", "metric"]
    )
    for agent, metric in KpiAlert.objects.filter(resolved_at__isnull=True).values_list("agent__agent_id", "metric_id"):
        family.add_metric([agent, metric], 1)
    yield family


def learnings() -> Iterator[Metric]:
    family = GaugeMetricFamily(f"{PREFIX}learnings", "Learnings by scope", labels=["scope"])
    counts = dict(Learning.objects.order_by().values_list("scope").annotate(n=Count("*")))
    for scope in Learning.Scope.values:
        family.add_metric([scope], counts.get(scope, 0))
    yield family


def embedding_backlog() -> Iterator[Metric]:
    """Rows without a vector of the configured model, by kind (the backend is built, never loaded)."""
    from memory.embeddings import get_backend

    model = get_backend().model
    family = GaugeMetricFamily(
        f"{PREFIX}embedding_backlog", "Memory rows waiting for a vector of the configured model", labels=["kind"]
    )
    for kind in indexing.MODELS:
        family.add_metric([kind], indexing.backlog(kind, model))
    yield family


def heartbeat() -> Iterator[Metric]:
    """Seconds since the beat's heartbeat task last succeeded on a worker; +Inf when it never did."""
    age = health.heartbeat()["age_seconds"]
    yield GaugeMetricFamily(
        f"{PREFIX}heartbeat_age_seconds",
        "Seconds since the heartbeat task last succeeded",
        value=math.inf if age is None else age,
    )
