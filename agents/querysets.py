"""Reads of agents, scoped to who asks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import models

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
