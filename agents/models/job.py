"""Jobs (seed 001's JobEnvelope + GraphState), their escalations and artifacts."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q

from agents.querysets import EscalationQuerySet, JobQuerySet

# Leases go to the most urgent queued job first, then the oldest (``agents.jobs.leases.lease_next``); the
# queue's partial index below is on this very expression, so the pick is an index scan.
PRIORITY_RANK = models.Case(
    models.When(priority="critical", then=models.Value(0)),
    models.When(priority="high", then=models.Value(1)),
    models.When(priority="normal", then=models.Value(2)),
    default=models.Value(3),
    output_field=models.SmallIntegerField(),
)


class Job(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        EXPIRED = "expired", "Expired"

    FINISHED = (Status.SUCCEEDED, Status.FAILED, Status.EXPIRED)

    job_id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    trace_id = models.UUIDField(default=uuid.uuid4)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="children")
    agent = models.ForeignKey("agents.Agent", on_delete=models.PROTECT, related_name="jobs")
    manifest = models.ForeignKey("agents.AgentManifest", on_delete=models.PROTECT, related_name="jobs")

    # The envelope, as submitted (with defaults filled in).
    intent = models.CharField(max_length=50)
    scope = models.JSONField()
    payload = models.JSONField(default=dict)
    constraints = models.JSONField()
    context = models.JSONField()
    priority = models.CharField(max_length=10, default="normal")
    idempotency_key = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)

    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    # Lease (the seed's lock): who works on the job and until when.
    lease_owner = models.CharField(max_length=200, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)

    # GraphState.
    current_node = models.CharField(max_length=200, default="start")
    visited_nodes = models.JSONField(default=list)
    retry_count = models.PositiveIntegerField(default=0)
    intermediate = models.JSONField(default=dict)
    budget = models.JSONField(default=dict)
    errors = models.JSONField(default=list)
    rag_context = models.JSONField(
        null=True, blank=True, help_text="What the job was told at its first lease (seed 001 ragContext)"
    )

    # AgentOutput and what the platform concluded from it.
    output = models.JSONField(null=True, blank=True)
    pre_conditions = models.JSONField(default=list)
    post_conditions = models.JSONField(default=list)

    objects = JobQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["agent", "status", "-created_at"], name="job_agent_status"),
            models.Index(fields=["status", "-created_at"], name="job_status"),
            models.Index(
                models.F("agent"), PRIORITY_RANK, models.F("created_at"), condition=Q(status="queued"), name="job_queue"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.intent} {self.job_id}"

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED


class IdempotencyKey(models.Model):
    """Claims an idempotency key for an agent until ``expires_at`` (the result TTL).

    The unique constraint is what makes 50 simultaneous identical submissions create one job:
    every other insert waits for the first to commit, then fails and replays it.
    """

    agent = models.ForeignKey("agents.Agent", on_delete=models.PROTECT, related_name="+")
    key = models.CharField(max_length=200)
    job = models.ForeignKey(Job, null=True, on_delete=models.PROTECT, related_name="+")
    expires_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["agent", "key"], name="idempotency_key_unique")]

    def __str__(self) -> str:
        return self.key


class Escalation(models.Model):
    class Status(models.TextChoices):
        OPEN = "open", "Open"
        REESCALATED = "reescalated", "Re-escalated"
        HANDLED = "handled", "Handled"
        EXPIRED = "expired", "Expired"

    job = models.ForeignKey(Job, on_delete=models.PROTECT, related_name="escalations")
    triggers = models.JSONField(help_text="The expressions that fired")
    reason = models.TextField()
    target_agent = models.ForeignKey(
        "agents.Agent", null=True, blank=True, on_delete=models.PROTECT, related_name="escalations_received"
    )
    human_required = models.BooleanField(default=False)
    child_job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    review_item = models.ForeignKey(
        "governance.ReviewItem", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.OPEN)
    timeout_hours = models.FloatField()
    deadline = models.DateTimeField()
    steps = models.JSONField(default=list, help_text="What happened to it, in order, with when and who")
    created_at = models.DateTimeField(auto_now_add=True)
    handled_at = models.DateTimeField(null=True, blank=True)

    objects = EscalationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(
                fields=["deadline"], name="escalation_open_deadline", condition=Q(status__in=["open", "reescalated"])
            )
        ]

    def __str__(self) -> str:
        return f"escalation of {self.job_id}: {self.reason}"


class JobArtifact(models.Model):
    """R3: the traceable files of a finished job, generated from its record."""

    class Kind(models.TextChoices):
        AUDIT = "audit", "audit.md"
        BACKLOG = "backlog", "backlog.json"
        GRAPH = "graph", "graph.json"

    job = models.ForeignKey(Job, on_delete=models.PROTECT, related_name="artifact_files")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    name = models.CharField(max_length=300)
    content_type = models.CharField(max_length=100)
    content = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["kind"]
        constraints = [models.UniqueConstraint(fields=["job", "kind"], name="job_artifact_kind_unique")]

    def __str__(self) -> str:
        return self.name
