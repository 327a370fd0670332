"""Agents of the fleet. Manifests, jobs and KPIs hang off the Agent."""

from __future__ import annotations

from django.core.validators import RegexValidator
from django.db import models

from agents.querysets import AgentQuerySet

# Dotted snake_case, as the seed's `agent.seo.vlevel`.
AGENT_ID_PATTERN = r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$"


class Agent(models.Model):
    agent_id = models.CharField(
        max_length=128,
        unique=True,
        validators=[RegexValidator(AGENT_ID_PATTERN, "Use dotted snake_case, e.g. agent.seo.vlevel.")],
        help_text="Stable identifier, dotted snake_case (agent.seo.vlevel).",
    )
    name = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = AgentQuerySet.as_manager()

    class Meta:
        ordering = ["agent_id"]

    def __str__(self) -> str:
        return self.agent_id
