"""The contract catalog (versions, fields) and the checks and daily statistics of LLM outputs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, overload

from django.db import models
from django.db.models import Q

from governance.contracts.querysets import ContractCheckQuerySet, ContractQuerySet

if TYPE_CHECKING:
    from agents.models import Agent, Job
    from sessions.models import AISession


class Contract(models.Model):
    """One version of an LLM output contract (seed 000): what a module of an agent runtime expects
    from one LLM call. Versions are immutable rows; editing makes the next version, and audit
    records keep the version they were checked against."""

    name = models.CharField(max_length=100, help_text="e.g. intent_ingestion")
    version = models.PositiveIntegerField()
    module = models.CharField(max_length=300, help_text="The runtime module that reads the output")
    section = models.CharField(max_length=100, help_text="Catalog section, e.g. Social or Mémoire")
    notes = models.TextField(blank=True, help_text="Vigilance / Conseil / Remarque notes of the catalog")
    is_current = models.BooleanField(default=True)
    content_sha256 = models.CharField(max_length=64, help_text="Of the rows and notes: a re-import compares it")
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=200)

    objects = ContractQuerySet.as_manager()

    class Meta:
        ordering = ["section", "name", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="contract_version_unique"),
            models.UniqueConstraint(fields=["name"], condition=Q(is_current=True), name="one_current_contract"),
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"


class ContractField(models.Model):
    """One row of a contract: a JSON path (with `[*]` and alternatives), the expected type in the
    catalog's words and as a checkable kind with its constraints, the requirement, and the runtime
    effect an operator loses when the model ignores it."""

    class Required(models.TextChoices):
        YES = "yes", "Yes"
        NO = "no", "No"
        CONDITIONAL = "conditional", "Conditional"
        IMPLICIT = "implicit", "Implicit"

    contract = models.ForeignKey(Contract, on_delete=models.CASCADE, related_name="fields")
    position = models.PositiveIntegerField()
    path = models.CharField(max_length=300, help_text="First path; `*` stands for every item of a list")
    alternatives = models.JSONField(default=list, blank=True, help_text="Other paths of the same row")
    path_text = models.CharField(max_length=500, help_text="The field column as the catalog writes it")
    type_text = models.CharField(max_length=300, help_text="The type column as the catalog writes it")
    kind = models.CharField(max_length=40)
    constraints = models.JSONField(default=dict, blank=True, help_text="Bounds, enum, keys, ...")
    required = models.CharField(max_length=12, choices=Required.choices)
    required_text = models.CharField(max_length=300)
    condition = models.CharField(max_length=300, blank=True)
    effect = models.TextField(blank=True)

    class Meta:
        ordering = ["contract", "position"]
        constraints = [models.UniqueConstraint(fields=["contract", "position"], name="contract_field_position")]

    def __str__(self) -> str:
        return self.path_text


class ContractCheck(models.Model):
    """One output checked against one contract version: the audit record."""

    class Source(models.TextChoices):
        API = "api", "API"
        BATCH = "batch", "Batch"
        LOG = "log", "LLM log"
        TOOL = "tool", "Tool result"

    contract = models.ForeignKey(Contract, on_delete=models.PROTECT, related_name="checks")
    contract_name = models.CharField(max_length=100)
    agent = models.ForeignKey("agents.Agent", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    submitted_by = models.CharField(max_length=200)
    session = models.ForeignKey(
        "ai_sessions.AISession", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    job = models.ForeignKey("agents.Job", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.API)
    compliant = models.BooleanField()
    violations = models.JSONField(default=list, blank=True)
    warnings = models.JSONField(default=list, blank=True)
    output = models.JSONField(null=True, blank=True, help_text="Empty when CONTRACT_AUDIT_STORE_OUTPUTS is off")
    output_sha256 = models.CharField(max_length=64)
    checked_at = models.DateTimeField()

    objects = ContractCheckQuerySet.as_manager()

    class Meta:
        ordering = ["-checked_at"]
        indexes = [
            models.Index(fields=["contract_name", "-checked_at"], name="check_by_contract"),
            models.Index(fields=["agent", "-checked_at"], name="check_by_agent"),
            models.Index(fields=["checked_at"], name="check_output_kept", condition=Q(output__isnull=False)),
            # The audit's admin, newest first: without it every page sorts every check (bench/scale.py).
            models.Index(fields=["-checked_at"], name="check_recent"),
        ]

    def __str__(self) -> str:
        return f"{self.contract_name} {'ok' if self.compliant else 'violations'} {self.checked_at:%Y-%m-%d %H:%M}"


class ContractDailyStat(models.Model):
    """Checks per day, contract and agent, kept up to date in the transaction that stores the
    checks, so report pages read thousands of rows instead of millions."""

    day = models.DateField()
    contract_name = models.CharField(max_length=100)
    agent_label = models.CharField(max_length=200, blank=True, help_text="Agent id, empty for operators")
    checks = models.PositiveIntegerField(default=0)
    compliant = models.PositiveIntegerField(default=0)
    violations = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-day", "contract_name"]
        constraints = [
            models.UniqueConstraint(fields=["day", "contract_name", "agent_label"], name="contract_daily_stat_key")
        ]

    def __str__(self) -> str:
        return f"{self.day} {self.contract_name} {self.agent_label or '-'}: {self.compliant}/{self.checks}"


class ContractViolationStat(models.Model):
    """Violations per day, contract, path pattern (indexes as `[*]`) and code."""

    day = models.DateField()
    contract_name = models.CharField(max_length=100)
    path = models.CharField(max_length=300)
    code = models.CharField(max_length=40)
    count = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-day", "-count"]
        constraints = [
            models.UniqueConstraint(fields=["day", "contract_name", "path", "code"], name="contract_violation_stat_key")
        ]

    def __str__(self) -> str:
        return f"{self.day} {self.contract_name} {self.path} {self.code}: {self.count}"


@overload
def checked(field: Literal["agent"]) -> type[Agent]: ...
@overload
def checked(field: Literal["session"]) -> type[AISession]: ...
@overload
def checked(field: Literal["job"]) -> type[Job]: ...
def checked(field: str) -> type[models.Model]:
    """The model a check's ``agent``, ``session`` or ``job`` points to. Contracts know the agents'
    records only through these foreign keys, so that agents (whose job results are checked against
    contracts) depend on contracts and never the other way round."""
    model = ContractCheck._meta.get_field(field).related_model
    assert isinstance(model, type)  # a foreign key's target, resolved once the apps are loaded
    return model
