"""Governance records: API keys, the audit trail, maintenance task runs, review items."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from governance.querysets import ContractCheckQuerySet, ContractQuerySet, ReviewItemQuerySet


class ApiKey(models.Model):
    """A bearer key for the REST API, bound to one agent or to one operator (a Django user).

    Only the hash of the key is stored; the plain key is shown once when it is issued.
    Revoking keeps the row so the audit trail still names the key that did something.
    """

    class Kind(models.TextChoices):
        AGENT = "agent", "Agent"
        OPERATOR = "operator", "Operator"

    name = models.CharField(max_length=100, help_text="What the key is for, e.g. the host it runs on.")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    agent = models.ForeignKey("agents.Agent", null=True, blank=True, on_delete=models.PROTECT, related_name="api_keys")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="api_keys"
    )
    prefix = models.CharField(max_length=16, unique=True, editable=False)
    key_hash = models.CharField(max_length=64, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=200, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_by = models.CharField(max_length=200, blank=True, editable=False)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API key"
        constraints = [
            models.CheckConstraint(
                name="apikey_bound_to_exactly_one_owner",
                condition=(
                    Q(kind="agent", agent__isnull=False, user__isnull=True)
                    | Q(kind="operator", user__isnull=False, agent__isnull=True)
                ),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind}, {self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    @property
    def owner_label(self) -> str:
        return self.agent.agent_id if self.kind == self.Kind.AGENT else self.user.get_username()


class AuditEvent(models.Model):
    """One row per state change made by a person, an agent or the system, written in the same
    transaction as the change itself."""

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.CharField(max_length=200, help_text="user:<name>, agent:<id> or system")
    action = models.CharField(max_length=100)
    target_type = models.CharField(max_length=100)
    target_id = models.CharField(max_length=200)
    data = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at"]
        indexes = [models.Index(fields=["target_type", "target_id"])]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor} {self.action} {self.target_type}:{self.target_id}"


class TaskRun(models.Model):
    """One execution of a Celery task, so pages and health checks can show what maintenance did."""

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        SUCCESS = "success", "Success"
        FAILURE = "failure", "Failure"
        RETRY = "retry", "Retry"

    task_name = models.CharField(max_length=200)
    task_id = models.CharField(max_length=64)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    worker = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["task_name", "-started_at"], name="taskrun_latest_by_name")]

    def __str__(self) -> str:
        return f"{self.task_name} {self.status} {self.started_at:%Y-%m-%d %H:%M:%S}"

    @property
    def duration_seconds(self) -> float | None:
        if self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()


class ReviewItem(models.Model):
    """Something waiting for a human decision in the reviewer inbox.

    Sessions (validation and communication requests), escalations and memory promotions all
    feed this one table, so reviewers work from a single queue.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        ANSWERED = "answered", "Answered"
        EXPIRED = "expired", "Expired"

    kind = models.CharField(max_length=50)
    title = models.CharField(max_length=300)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True)
    agent = models.ForeignKey(
        "agents.Agent", null=True, blank=True, on_delete=models.PROTECT, related_name="review_items"
    )
    payload = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)

    objects = ReviewItemQuerySet.as_manager()

    class Meta:
        ordering = ["created_at"]
        permissions = [("decide_reviewitem", "Can approve, reject or answer review items")]

    def __str__(self) -> str:
        return f"{self.kind}: {self.title}"


class ReviewDecision(models.Model):
    """A human (or the system, on expiry) deciding a review item. Written once, never changed.

    ``payload_hash`` is the SHA-256 of the item's payload at decision time, so what was approved
    can be proven later even if someone edits the item.
    """

    class Decision(models.TextChoices):
        APPROVE = "approve", "Approve"
        REJECT = "reject", "Reject"
        ANSWER = "answer", "Answer"
        EXPIRE = "expire", "Expire"

    item = models.OneToOneField(ReviewItem, on_delete=models.PROTECT, related_name="decision")
    decision = models.CharField(max_length=10, choices=Decision.choices)
    comment = models.TextField(blank=True)
    answer = models.JSONField(null=True, blank=True)
    decided_by = models.CharField(max_length=200, help_text="user:<name> or system")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    decided_at = models.DateTimeField(auto_now_add=True)
    payload_hash = models.CharField(max_length=64)

    class Meta:
        ordering = ["-decided_at"]

    def __str__(self) -> str:
        return f"{self.decision} by {self.decided_by}"


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
