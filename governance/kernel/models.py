"""The kernel's records: API keys, the audit trail, maintenance task runs (app label ``governance``)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from governance.kernel.audit import AuditAction


class ApiKey(models.Model):
    """A bearer key for the REST API, bound to one agent or to one operator (a Django user).

    Only the hash of the key is stored; the plain key is shown once when it is issued.
    Revoking keeps the row so the audit trail still names the key that did something.
    An operator key acts as its user: one minted for the user by someone else (a superuser, the
    ``create_api_key`` command) says so in ``minted_by``, and so does everything done with it.
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
    minted_by = models.CharField(
        max_length=200,
        blank=True,
        default="",
        db_default="",  # keys the previous release issues while the new one migrates
        editable=False,
        help_text="Who minted this operator key for its user (a superuser, the create_api_key command); "
        "empty when the user minted it.",
    )
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
    action = models.CharField(max_length=100, choices=AuditAction.choices)
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
        indexes = [
            models.Index(fields=["task_name", "-started_at"], name="taskrun_latest_by_name"),
            models.Index(fields=["started_at"], name="taskrun_age"),
        ]

    def __str__(self) -> str:
        return f"{self.task_name} {self.status} {self.started_at:%Y-%m-%d %H:%M:%S}"

    @property
    def duration_seconds(self) -> float | None:
        if self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()


class RetentionRun(models.Model):
    """One run of the retention policies (``controlplane/retention.py``): what each step archived or
    pruned, so an operator sees what maintenance removed and when. Dry runs leave no row."""

    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()
    actor = models.CharField(max_length=200)
    rows = models.PositiveBigIntegerField(help_text="Rows archived or pruned, all steps together")
    steps = models.JSONField(default=list, help_text="Per step: table, action, days, cutoff, rows, seconds")

    class Meta:
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return f"retention {self.started_at:%Y-%m-%d %H:%M}: {self.rows} rows"
