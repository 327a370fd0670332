"""The registries of the fleet's vocabulary: domains, job intents, entity types and agent roles.

One table each (not one table with a kind column) so that each has its own add and change
permissions, which the API, the admin and the command check: an operator may be trusted to add
entity types and not roles. Values are never deleted: a value still named by agents, jobs,
learnings or triggers is retired (``retired_at``), which refuses new use and keeps the rows that
have it readable. Written only through agents/registries.py (audited).
"""

from __future__ import annotations

from django.core.validators import RegexValidator
from django.db import models

from agents.vocabulary import MAX_LABEL_LENGTH, MAX_VALUE_LENGTH, VALUE_PATTERN, VALUE_SHAPE


class RegistryEntry(models.Model):
    value = models.CharField(
        max_length=MAX_VALUE_LENGTH,
        unique=True,
        validators=[RegexValidator(VALUE_PATTERN, f"Use {VALUE_SHAPE}.")],
        help_text=f"What manifests, jobs and learnings write: {VALUE_SHAPE}. Never changes once added.",
    )
    label = models.CharField(max_length=MAX_LABEL_LENGTH, help_text="What pages and forms show.")
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=200)
    retired_at = models.DateTimeField(
        null=True, blank=True, help_text="Retired: what already uses the value keeps it; nothing new may."
    )
    retired_by = models.CharField(max_length=200, blank=True)

    class Meta:
        abstract = True
        ordering = ["value"]

    def __str__(self) -> str:
        return self.value

    @property
    def retired(self) -> bool:
        return self.retired_at is not None


class Domain(RegistryEntry):
    """What an agent works on (a manifest's ``domain``), and the domain of a learning."""

    class Meta(RegistryEntry.Meta):
        verbose_name = "domain"


class Intent(RegistryEntry):
    """What a job asks for (a JobEnvelope's ``intent``, a manifest's ``intents``)."""

    class Meta(RegistryEntry.Meta):
        verbose_name = "job intent"


class EntityType(RegistryEntry):
    """What a job's scope is about (``scope.entityType``)."""

    class Meta(RegistryEntry.Meta):
        verbose_name = "entity type"


class AgentRole(RegistryEntry):
    """An agent's part in the fleet (a manifest's ``role``)."""

    class Meta(RegistryEntry.Meta):
        verbose_name = "agent role"
