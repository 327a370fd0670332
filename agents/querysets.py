"""Reads of the agents app, scoped to who asks (`visible_to` is the one access filter)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import models
from django.utils import timezone

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
        from agents.kpi import STATUS_SEVERITY
        from agents.kpis import worst_statuses

        agents = list(self.select_related("active_manifest"))
        statuses = worst_statuses(agents, window_days)
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
