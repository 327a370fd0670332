"""Reads of the agents app, scoped to who asks (`visible_to` is the one access filter)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.db import models
from django.db.models import Avg, Q
from django.db.models.functions import TruncDate
from django.utils import timezone

from agents.kpi import DERIVED_METRICS, STATUS_SEVERITY, kpi_status, worst
from governance.kernel.querysets import PrincipalQuerySet

if TYPE_CHECKING:
    from agents.models import Agent
    from governance.kernel.principals import Principal


class AgentQuerySet(PrincipalQuerySet):
    """An agent sees itself; an operator sees the fleet when allowed to view agents."""

    owner_field = "pk"
    view_perm = "agents.view_agent"

    def for_agent(self, principal: Principal) -> AgentQuerySet:
        return self.filter(pk=principal.agent.pk)

    def filtered(self, *, role: str = "", domain: str = "", owner: str = "") -> AgentQuerySet:
        """Narrow the fleet by identity fields; empty values leave the fleet as it is."""
        lookups = {"role": role, "domain": domain, "owner": owner}
        return self.filter(**{field: value for field, value in lookups.items() if value})

    def owners(self) -> list[str]:
        """The distinct owners, for filter choices."""
        return list(self.exclude(owner="").order_by("owner").values_list("owner", flat=True).distinct())

    def ranked_by_kpi_status(self, window_days: int, status: str = "") -> list[Agent]:
        """The agents, each with ``kpi_status`` set, worst first (critical, warning, ok, no_data),
        then by agent_id. Statuses come from the KPI roll-up, not a column, so the ordering and the
        status filter happen after the (constant number of) queries."""
        from agents.models import KpiSample

        agents = list(self.select_related("active_manifest"))
        statuses = KpiSample.objects.worst_statuses(agents, window_days)
        for agent in agents:
            agent.kpi_status = statuses[agent.pk]
        if status:
            agents = [agent for agent in agents if agent.kpi_status == status]
        return sorted(agents, key=lambda agent: (-STATUS_SEVERITY[agent.kpi_status], agent.agent_id))


class JobQuerySet(PrincipalQuerySet):
    view_perm = "agents.view_job"

    def with_escalation_flag(self) -> JobQuerySet:
        from agents.models import Escalation

        return self.annotate(escalated=models.Exists(Escalation.objects.filter(job=models.OuterRef("pk"))))

    def for_list(self) -> JobQuerySet:
        """What a job table shows, in one query whatever the number of rows."""
        return self.select_related("agent").with_escalation_flag()

    def filtered(
        self, *, status: str = "", intent: str = "", agent: Any = None, escalated: bool | None = None
    ) -> JobQuerySet:
        """Narrow jobs; ``escalated`` needs ``with_escalation_flag()`` (or ``for_list()``) first."""
        jobs = self
        if status:
            jobs = jobs.filter(status=status)
        if intent:
            jobs = jobs.filter(intent=intent)
        if agent is not None:
            jobs = jobs.filter(agent=agent)
        if escalated is not None:
            jobs = jobs.filter(escalated=escalated)
        return jobs


class EscalationQuerySet(PrincipalQuerySet):
    owner_field = "job__agent"
    view_perm = "agents.view_escalation"

    def overdue(self) -> EscalationQuerySet:
        return self.filter(status__in=["open", "reescalated"], deadline__lte=timezone.now())


class KpiSampleQuerySet(models.QuerySet):
    """The KPI roll-ups: what an agent's KPIs are judged on, over a window.

    An agent does not judge its own KPIs: for a KPI the platform derives from its jobs
    (``DERIVED_METRICS``) only the derived samples count, and the agent's ``reported`` figures
    are shown beside them; a KPI the platform cannot measure is judged on the agent's figures."""

    def judged(self) -> KpiSampleQuerySet:
        return self.filter(Q(reported=False) | ~Q(metric_id__in=DERIVED_METRICS))

    def averages(
        self, agent_ids: list[int], since: datetime, *, metric_ids: set[str] | None = None, reported: bool = False
    ) -> dict[tuple[int, str], float]:
        """Mean sample per (agent, metric) since ``since``: what KPI statuses are judged on; with
        ``reported``, the mean of what the agent itself reported instead."""
        samples = self.filter(agent_id__in=agent_ids, recorded_at__gte=since)
        samples = samples.filter(reported=True) if reported else samples.judged()
        if metric_ids is not None:
            samples = samples.filter(metric_id__in=metric_ids)
        rows = samples.values_list("agent_id", "metric_id").annotate(mean=Avg("value"))
        return {(agent_id, metric_id): mean for agent_id, metric_id, mean in rows}

    def report(self, agent: Agent, window_days: int) -> list[dict[str, Any]]:
        """Each KPI of the active manifest with its mean over the window and its status, where that
        mean comes from (``source``: derived by the platform, or reported by the agent for a KPI the
        platform cannot measure) and the mean of what the agent reported (``reported``)."""
        manifest = agent.active_manifest
        if manifest is None:
            return []
        since = timezone.now() - timedelta(days=window_days)
        means = self.averages([agent.pk], since)
        claims = self.averages([agent.pk], since, reported=True)
        return [
            {
                "metric_id": kpi.metric_id,
                "target": kpi.target,
                "threshold_warning": kpi.threshold_warning,
                "threshold_critical": kpi.threshold_critical,
                "unit": kpi.unit,
                "direction": kpi.direction,
                "current": (current := means.get((agent.pk, kpi.metric_id))),
                "status": kpi_status(current, kpi.threshold_warning, kpi.threshold_critical, kpi.direction),
                "source": "derived" if kpi.metric_id in DERIVED_METRICS else "reported",
                "reported": claims.get((agent.pk, kpi.metric_id)),
            }
            for kpi in manifest.kpis.all()
        ]

    def trend(self, agent: Agent, metric_id: str, days: int) -> list[tuple[str, float]]:
        """Daily means of the samples the KPI is judged on, oldest first, for the trend chart."""
        since = timezone.now() - timedelta(days=days)
        rows = (
            self.judged()
            .filter(agent=agent, metric_id=metric_id, recorded_at__gte=since)
            .annotate(day=TruncDate("recorded_at"))
            .values_list("day")
            .annotate(mean=Avg("value"))
            .order_by("day")
        )
        return [(day.isoformat(), mean) for day, mean in rows]

    def worst_statuses(self, agents: list[Agent], window_days: int) -> dict[int, str]:
        """The worst KPI status of each agent, in two queries for the whole fleet."""
        from agents.models import ManifestKpi

        means = self.averages([a.pk for a in agents], timezone.now() - timedelta(days=window_days))
        statuses: dict[int, list[str]] = {a.pk: [] for a in agents}
        manifest_owner = {a.active_manifest_id: a.pk for a in agents if a.active_manifest_id}
        for kpi in ManifestKpi.objects.filter(manifest_id__in=manifest_owner):
            agent_id = manifest_owner[kpi.manifest_id]
            current = means.get((agent_id, kpi.metric_id))
            statuses[agent_id].append(kpi_status(current, kpi.threshold_warning, kpi.threshold_critical, kpi.direction))
        return {agent_id: worst(found) for agent_id, found in statuses.items()}
