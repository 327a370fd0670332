"""Agents and their versioned manifests."""

from __future__ import annotations

from django.core.validators import RegexValidator
from django.db import models

from agents.manifest import AGENT_ID_PATTERN, KpiDirection, Permission
from agents.querysets import AgentQuerySet
from agents.vocabulary import MAX_VALUE_LENGTH


class Agent(models.Model):
    """An agent of the fleet. Identity fields mirror its active manifest for filtering."""

    agent_id = models.CharField(
        max_length=128,
        unique=True,
        validators=[RegexValidator(AGENT_ID_PATTERN, "Use dotted snake_case, e.g. agent.seo.vlevel.")],
        help_text="Stable identifier, dotted snake_case (agent.seo.vlevel).",
    )
    name = models.CharField(max_length=200, blank=True)
    role = models.CharField(max_length=MAX_VALUE_LENGTH, blank=True, help_text="A value of the roles registry.")
    domain = models.CharField(max_length=MAX_VALUE_LENGTH, blank=True, help_text="A value of the domains registry.")
    owner = models.CharField(max_length=200, blank=True)
    active_manifest = models.OneToOneField(
        "agents.AgentManifest", null=True, blank=True, on_delete=models.PROTECT, related_name="active_for"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = AgentQuerySet.as_manager()

    class Meta:
        ordering = ["agent_id"]

    def __str__(self) -> str:
        return self.agent_id


class AgentManifest(models.Model):
    """One version of an agent's contract. Versions only go up; old ones stay readable.

    ``document`` is the canonical JSON of the whole manifest (every section of seed 001);
    tools and KPIs are also kept as rows because rate limiting and KPI roll-ups query them.
    ``registry_schemas`` is a snapshot of the named-schema registry's definitions for the names
    the document uses without defining (agents/named_schemas.py): the version's contract is fixed
    when it is stored, whatever the registry becomes.
    """

    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="manifests")
    version = models.CharField(max_length=100)
    version_major = models.PositiveIntegerField()
    version_minor = models.PositiveIntegerField()
    version_patch = models.PositiveIntegerField()
    document = models.JSONField()
    content_hash = models.CharField(max_length=64)
    registry_schemas = models.JSONField(
        default=dict,
        blank=True,
        help_text="The named schemas' definitions the document's names resolved to when it was stored.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=200)

    class Meta:
        ordering = ["agent", "-version_major", "-version_minor", "-version_patch", "-created_at"]
        constraints = [models.UniqueConstraint(fields=["agent", "version"], name="manifest_version_unique")]

    def __str__(self) -> str:
        return f"{self.agent.agent_id} {self.version}"


class ManifestTool(models.Model):
    manifest = models.ForeignKey(AgentManifest, on_delete=models.CASCADE, related_name="tools")
    tool_id = models.CharField(max_length=200)
    permission = models.CharField(max_length=10, choices=[(p.value, p.name.title()) for p in Permission])
    rate_limit = models.PositiveIntegerField(help_text="Calls per minute")
    requires_approval = models.BooleanField()
    contract = models.CharField(max_length=100, blank=True, help_text="Contract each result is checked against")

    class Meta:
        ordering = ["tool_id"]
        constraints = [models.UniqueConstraint(fields=["manifest", "tool_id"], name="manifest_tool_unique")]

    def __str__(self) -> str:
        return f"{self.tool_id} ({self.permission}, {self.rate_limit}/min)"


class ManifestKpi(models.Model):
    manifest = models.ForeignKey(AgentManifest, on_delete=models.CASCADE, related_name="kpis")
    metric_id = models.CharField(max_length=100)
    target = models.FloatField()
    threshold_warning = models.FloatField()
    threshold_critical = models.FloatField()
    unit = models.CharField(max_length=50, blank=True)
    direction = models.CharField(max_length=20, choices=[(d.value, d.value.replace("_", " ")) for d in KpiDirection])

    class Meta:
        ordering = ["metric_id"]
        constraints = [models.UniqueConstraint(fields=["manifest", "metric_id"], name="manifest_kpi_unique")]

    def __str__(self) -> str:
        return self.metric_id
