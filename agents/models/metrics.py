"""What agents measured (KPI samples) and did (tool calls)."""

from __future__ import annotations

from django.db import models

from agents.querysets import KpiSampleQuerySet


class KpiSample(models.Model):
    """One measure of a KPI. ``reported`` samples are the agent's own figures (a result's
    ``metrics``): kept and shown as such, but a KPI the platform derives from its jobs is judged on
    its derived samples only (agents.querysets.KpiSampleQuerySet)."""

    agent = models.ForeignKey("agents.Agent", on_delete=models.PROTECT, related_name="kpi_samples")
    metric_id = models.CharField(max_length=100)
    value = models.FloatField()
    recorded_at = models.DateTimeField()
    job = models.ForeignKey("agents.Job", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    reported = models.BooleanField(default=False, help_text="The agent's own figure, not measured by the platform")

    objects = KpiSampleQuerySet.as_manager()

    class Meta:
        ordering = ["-recorded_at"]
        indexes = [models.Index(fields=["agent", "metric_id", "-recorded_at"], name="kpi_sample_series")]

    def __str__(self) -> str:
        return f"{self.metric_id}={self.value}"


class KpiAlert(models.Model):
    """A KPI of an agent that turned critical (its mean over KPI_WINDOW_DAYS crossed the critical
    threshold). At most one open per agent and metric (the constraint): the inbox hears of it once,
    and again only after the KPI has recovered."""

    agent = models.ForeignKey("agents.Agent", on_delete=models.PROTECT, related_name="kpi_alerts")
    metric_id = models.CharField(max_length=100)
    opened_at = models.DateTimeField()
    value = models.FloatField(help_text="The window mean that turned critical")
    threshold_critical = models.FloatField()
    review_item = models.OneToOneField(
        "governance.ReviewItem", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_value = models.FloatField(null=True, blank=True, help_text="The window mean once recovered")

    class Meta:
        ordering = ["-opened_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "metric_id"], condition=models.Q(resolved_at__isnull=True), name="kpi_alert_open_once"
            )
        ]

    def __str__(self) -> str:
        return f"{self.metric_id} critical since {self.opened_at:%Y-%m-%d %H:%M}"


class ToolCall(models.Model):
    """One call of a manifest tool, recorded by the agent before it makes the call."""

    agent = models.ForeignKey("agents.Agent", on_delete=models.PROTECT, related_name="tool_calls")
    tool_id = models.CharField(max_length=200)
    job = models.ForeignKey("agents.Job", null=True, blank=True, on_delete=models.PROTECT, related_name="tool_calls")
    called_at = models.DateTimeField()
    dry_run = models.BooleanField(default=False, help_text="Named a dryRun job: recorded, not to be made")
    # The call's number among its agent's calls of the tool (1, 2, ...), in the order of
    # called_at: the rate limit counts a window as the difference of two numbers, not its rows
    # (agents_tool_call_record, migration 0019). Empty on rows older than that.
    seq = models.BigIntegerField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["-called_at"]
        indexes = [
            models.Index(fields=["agent", "tool_id", "-called_at"], name="tool_call_window"),
            models.Index(fields=["agent", "tool_id", "seq"], name="tool_call_seq"),
            models.Index(fields=["called_at"], name="tool_call_age"),
        ]

    def __str__(self) -> str:
        return f"{self.tool_id} at {self.called_at:%H:%M:%S}"


class ToolGrant(models.Model):
    """A reviewer's permission for one call of a tool whose manifest entry requires approval.

    It is bound to the hash of the call's arguments and usable once: an agent that was allowed
    to snapshot one page cannot reuse the approval for another page, or twice. A reviewer who
    approved edited arguments bound it to those; ``requested_hash`` keeps the hash of the ones
    the agent asked for, which finds the grant (to say what was approved instead), never uses it."""

    class Status(models.TextChoices):
        PENDING = "pending"
        APPROVED = "approved"
        REJECTED = "rejected"
        EXPIRED = "expired"
        USED = "used"

    agent = models.ForeignKey("agents.Agent", on_delete=models.PROTECT, related_name="tool_grants")
    tool_id = models.CharField(max_length=200)
    arguments_hash = models.CharField(max_length=64)
    arguments = models.JSONField(default=dict, blank=True)
    requested_hash = models.CharField(
        max_length=64,
        blank=True,
        default="",
        db_default="",  # grants the previous release opens while the new one migrates
        help_text="The hash of the arguments asked for, when a reviewer approved edited ones; else empty",
    )
    review_item = models.OneToOneField("governance.ReviewItem", on_delete=models.PROTECT, related_name="tool_grant")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    job = models.ForeignKey("agents.Job", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    used_at = models.DateTimeField(null=True, blank=True)
    tool_call = models.OneToOneField(
        ToolCall, null=True, blank=True, on_delete=models.PROTECT, related_name="grant", help_text="The one use"
    )

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["agent", "tool_id", "arguments_hash", "-created_at"], name="tool_grant_lookup"),
            models.Index(
                fields=["agent", "tool_id", "requested_hash"],
                name="tool_grant_edited_lookup",
                condition=~models.Q(requested_hash=""),
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "tool_id", "arguments_hash"],
                condition=models.Q(status__in=["pending", "approved"]),
                name="one_open_grant_per_call",
            ),
            models.CheckConstraint(
                name="a_used_grant_names_its_call",
                condition=~models.Q(status="used") | models.Q(tool_call__isnull=False, used_at__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tool_id} ({self.status})"
