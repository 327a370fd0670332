"""AI sessions (seed 003's AISessionEntity), their messages, and automations."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q

from sessions.machine import EndReason, Phase, SessionType, SystemMessageType


def _choices(enum: type) -> list[tuple[str, str]]:
    return [(member.value, member.value) for member in enum]


class AISession(models.Model):
    """One session of an agent. At most one is active per agent: a partial unique index says so,
    so no code path, however concurrent, can activate two."""

    session_id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey("agents.Agent", on_delete=models.PROTECT, related_name="sessions")
    name = models.CharField(max_length=200)
    type = models.CharField(max_length=12, choices=_choices(SessionType))
    require_validation = models.BooleanField(default=False)
    phase = models.CharField(max_length=40, choices=_choices(Phase), default=Phase.IDLE.value)
    waiting_context = models.JSONField(null=True, blank=True)
    total_roundtrips = models.PositiveIntegerField(default=0)
    last_event_time = models.DateTimeField(null=True, blank=True)
    last_user_interaction_time = models.DateTimeField(null=True, blank=True)
    automation = models.ForeignKey(
        "ai_sessions.Automation", null=True, blank=True, on_delete=models.PROTECT, related_name="sessions"
    )
    trigger = models.CharField(max_length=10, blank=True, help_text="MANUAL, SCHEDULED or EVENT for automation runs")
    scheduled_execution_time = models.DateTimeField(null=True, blank=True)
    queued_at = models.DateTimeField(null=True, blank=True, help_text="Waiting for the agent's slot (FIFO)")
    provider_id = models.CharField(max_length=50, blank=True)
    provider_session_id = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_activity = models.DateTimeField(auto_now=True)
    is_active = models.BooleanField(default=False)
    end_reason = models.CharField(max_length=20, choices=_choices(EndReason), null=True, blank=True)
    pending_end_reason = models.CharField(max_length=20, choices=_choices(EndReason), null=True, blank=True)
    timer_at = models.DateTimeField(null=True, blank=True)
    timer_event = models.CharField(max_length=40, blank=True)
    tokens_used = models.JSONField(default=dict, help_text="input / output / cacheWrite / cacheRead token totals")

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["agent"], condition=Q(is_active=True), name="one_active_session_per_agent"),
        ]
        indexes = [
            models.Index(fields=["timer_at"], name="session_due_timer", condition=Q(timer_at__isnull=False)),
            models.Index(
                fields=["agent", "queued_at", "created_at"],
                name="session_resumable",
                condition=Q(is_active=False, type="AUTOMATION") & ~Q(phase="COMPLETED"),
            ),
            models.Index(fields=["is_active", "phase"], name="session_active_phase", condition=Q(is_active=True)),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.type}, {self.phase})"


class SessionMessage(models.Model):
    """The unified message (seed 003): which fields are filled tells the variant apart."""

    class Sender(models.TextChoices):
        USER = "USER"
        AI = "AI"
        SYSTEM = "SYSTEM"

    message_id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    session = models.ForeignKey(AISession, on_delete=models.PROTECT, related_name="messages")
    seq = models.PositiveIntegerField(help_text="Order within the session")
    timestamp = models.DateTimeField()
    sender = models.CharField(max_length=6, choices=Sender.choices)
    rich_content = models.JSONField(null=True, blank=True, help_text="segments, linearText, dataCommands")
    text_content = models.TextField(null=True, blank=True)
    ai_message = models.JSONField(null=True, blank=True, help_text="The parsed AIMessage")
    ai_message_json = models.TextField(null=True, blank=True, help_text="The model's original JSON")
    system_message = models.JSONField(null=True, blank=True, help_text="type, commandResults, summary, formattedData")
    system_type = models.CharField(max_length=20, choices=_choices(SystemMessageType), blank=True)
    execution_metadata = models.JSONField(null=True, blank=True)
    exclude_from_prompt = models.BooleanField(default=False)
    fallback_kind = models.CharField(
        max_length=30, blank=True, help_text="VALIDATION_CANCELLED / COMMUNICATION_CANCELLED placeholders"
    )
    removed_at = models.DateTimeField(
        null=True, blank=True, help_text="Fallbacks are withdrawn, not deleted, once the answer comes"
    )

    class Meta:
        ordering = ["session", "seq"]
        constraints = [models.UniqueConstraint(fields=["session", "seq"], name="session_message_order")]

    def __str__(self) -> str:
        return f"{self.sender} #{self.seq}"


class Automation(models.Model):
    """A SEED session run again and again: on a schedule, by hand, or on an event."""

    class Trigger(models.TextChoices):
        MANUAL = "MANUAL"
        SCHEDULED = "SCHEDULED"
        EVENT = "EVENT"

    agent = models.ForeignKey("agents.Agent", on_delete=models.PROTECT, related_name="automations")
    name = models.CharField(max_length=200)
    seed_session = models.ForeignKey(AISession, on_delete=models.PROTECT, related_name="+")
    trigger = models.CharField(max_length=10, choices=Trigger.choices, default=Trigger.SCHEDULED)
    interval_minutes = models.PositiveIntegerField(null=True, blank=True, help_text="For SCHEDULED automations")
    enabled = models.BooleanField(default=True)
    next_run_at = models.DateTimeField(null=True, blank=True)
    provider = models.CharField(max_length=20, blank=True, help_text="Set to host the session: the server calls it")
    provider_config = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=200)

    class Meta:
        ordering = ["name"]
        indexes = [
            models.Index(fields=["next_run_at"], name="automation_due", condition=Q(enabled=True, trigger="SCHEDULED"))
        ]

    def __str__(self) -> str:
        return self.name


class PromptChunk(models.Model):
    """A piece of the level-1 documentation every model call starts with, editable by operators.

    Chunks are ordered by importance (highest first) and can be limited to session types; the
    round-trip limits of the session's type are always appended (seed section 10).
    """

    key = models.SlugField(max_length=100, unique=True)
    title = models.CharField(max_length=200)
    body = models.TextField()
    importance = models.PositiveSmallIntegerField(default=50, help_text="Higher comes first")
    session_types = models.JSONField(default=list, blank=True, help_text='Empty for all, or e.g. ["AUTOMATION"]')
    enabled = models.BooleanField(default=True)

    class Meta:
        ordering = ["-importance", "key"]

    def __str__(self) -> str:
        return self.title
