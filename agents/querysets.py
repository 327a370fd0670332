"""Reads of the agents app, scoped to who asks (`visible_to` is the one access filter)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import models
from django.utils import timezone

if TYPE_CHECKING:
    from governance.principals import Principal


class AgentQuerySet(models.QuerySet):
    def visible_to(self, principal: Principal) -> AgentQuerySet:
        """An agent sees itself; an operator sees the fleet when allowed to view agents."""
        if principal.agent is not None:
            return self.filter(pk=principal.agent.pk)
        if principal.has_perm("agents.view_agent"):
            return self
        return self.none()


class JobQuerySet(models.QuerySet):
    def visible_to(self, principal: Principal) -> JobQuerySet:
        if principal.agent is not None:
            return self.filter(agent=principal.agent)
        if principal.has_perm("agents.view_job"):
            return self
        return self.none()

    def with_escalation_flag(self) -> JobQuerySet:
        from agents.models import Escalation

        return self.annotate(escalated=models.Exists(Escalation.objects.filter(job=models.OuterRef("pk"))))


class EscalationQuerySet(models.QuerySet):
    def overdue(self) -> EscalationQuerySet:
        return self.filter(status__in=["open", "reescalated"], deadline__lte=timezone.now())
