"""AI sessions (seed 003's AISessionEntity), their messages, and automations."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from governance.kernel import cron as cron_rules
from governance.kernel import secrets
from sessions.machine import EndReason, Phase, SessionType, SystemMessageType
from sessions.querysets import AutomationQuerySet, SessionQuerySet


def _choices(enum: type) -> list[tuple[str, str]]:
    return [(member.value, member.value) for member in enum]


class AISession(models.Model):
    """One session of an agent. At most one is active per agent: a partial unique index says so,
    so no code path, however concurrent, can activate two.

    The processor stores its state at every event through governance/kernel/rows.py: those writes
    bypass save() and the pre_save/post_save signals (tests/governance/kernel/test_rows.py)."""

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
    # The slot a SCHEDULED run was due in (seed 003's scheduledExecutionTime): the session page shows
    # how late the run started, and the automation's next slot is counted from it (next_run_following).
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
    phase_deadline_at = models.DateTimeField(
        null=True, blank=True, help_text="When the active phase's work is overdue (SESSION_PHASE_DEADLINES)"
    )
    tokens_used = models.JSONField(default=dict, help_text="input / output / cacheWrite / cacheRead token totals")
    # What the session works on, for its prompt's step-0 memory block (seed 004), when it names one.
    story = models.CharField(
        max_length=100, blank=True, help_text="The story the session works on: its step-0 memory block"
    )
    domain = models.CharField(max_length=100, blank=True, help_text="The memory domain (else the agent's)")
    project = models.CharField(max_length=100, blank=True, help_text="The memory project of the step-0 block")
    memory_served_at = models.DateTimeField(
        null=True, blank=True, help_text="When its block was first served: injections are recorded once a session"
    )

    objects = SessionQuerySet.as_manager()

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
            models.Index(
                fields=["phase_deadline_at"],
                name="session_phase_deadline",
                condition=Q(phase_deadline_at__isnull=False),
            ),
            models.Index(fields=["last_activity"], name="session_finished", condition=Q(phase="COMPLETED")),
            # The session list and its admin, newest first: without it every page sorts every session.
            models.Index(fields=["-created_at"], name="session_recent"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.type}, {self.phase})"


class SessionMessage(models.Model):
    """The unified message (seed 003): which fields are filled tells the variant apart.

    The parsed answer (``ai_message``) is stored through governance/kernel/rows.py: that write
    bypasses save() and the pre_save/post_save signals (tests/governance/kernel/test_rows.py)."""

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
    archived_at = models.DateTimeField(
        null=True, blank=True, help_text="When retention cleared its contents (RETENTION_SESSION_MESSAGES_DAYS)"
    )

    class Meta:
        ordering = ["session", "seq"]
        constraints = [models.UniqueConstraint(fields=["session", "seq"], name="session_message_order")]
        indexes = [models.Index(fields=["session"], name="message_not_archived", condition=Q(archived_at__isnull=True))]

    def __str__(self) -> str:
        return f"{self.sender} #{self.seq}"


class ActionResult(models.Model):
    """The outcome of one action command, recorded once: the unique (session, command id) makes a
    result posted twice, or an action reported again after a resume, a no-op instead of a second
    record. Command ids come from the AI message (sessions/processor.py: ``<message>-<n>``)."""

    session = models.ForeignKey(AISession, on_delete=models.PROTECT, related_name="action_results")
    command_id = models.CharField(max_length=100)
    ai_message = models.ForeignKey(SessionMessage, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    status = models.CharField(max_length=10)
    result = models.JSONField(help_text="The command result as the ACTIONS_EXECUTED system message shows it")
    recorded_at = models.DateTimeField()

    class Meta:
        ordering = ["session", "recorded_at", "pk"]
        constraints = [models.UniqueConstraint(fields=["session", "command_id"], name="action_result_once")]

    def __str__(self) -> str:
        return f"{self.command_id}: {self.status}"


class ProviderCall(models.Model):
    """One hosted model call: the turn it answers, how many times the provider was asked, and the
    answer, stored before it is applied to the session.

    It is what makes a hosted call exactly-once. A worker that dies between storing the answer
    and applying it leaves the answer here; the task delivered again applies it without asking
    the model a second time. A second task for the same turn while a call is under way (the
    phase deadline re-queues the call, the broker delivers again) finds the attempt in flight
    and leaves it alone. Only a call whose worker is surely gone (started longer ago than the
    task's hard time limit) is made again. Written by sessions/hosted.py only.
    """

    class Status(models.TextChoices):
        CALLING = "calling"
        ANSWERED = "answered"
        FAILED = "failed"

    session = models.ForeignKey(AISession, on_delete=models.PROTECT, related_name="provider_calls")
    turn = models.PositiveIntegerField(help_text="The seq of the session's last message when the call began")
    profile = models.ForeignKey(
        "ProviderProfile", null=True, blank=True, on_delete=models.SET_NULL, related_name="calls"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.CALLING)
    attempts = models.PositiveSmallIntegerField(default=0, help_text="How many times the provider was asked")
    started_at = models.DateTimeField(help_text="When the latest attempt began")
    finished_at = models.DateTimeField(null=True, blank=True)
    content = models.TextField(blank=True, help_text="The model's answer, kept until the session has it")
    tokens = models.JSONField(default=dict, blank=True)
    metadata = models.JSONField(
        default=dict, blank=True, help_text="The answer's executionMetadata: model, response id, durations"
    )
    error = models.CharField(max_length=200, blank=True, help_text="The failure as the agent saw it")

    class Meta:
        ordering = ["session", "turn"]
        constraints = [models.UniqueConstraint(fields=["session", "turn"], name="provider_call_once_per_turn")]

    def __str__(self) -> str:
        return f"{self.session_id} turn {self.turn}: {self.status} ({self.attempts} attempts)"


class ProviderProfile(models.Model):
    """How the server reaches one model for hosted automations, set up by an operator.

    Agents never give a URL or a key: an automation names a profile, and an agent may name only
    the profiles its active manifest lists (``provider_profiles``). The key itself is never in a
    row: ``secret_name`` names the environment variable holding it (``<NAME>_FILE`` works too,
    for mounted secrets), read at call time. ``internal`` is the operator saying this model lives on
    a private network (a local Ollama): plain http and private or loopback addresses are then
    allowed for it. Written through sessions/profiles.py only (audited).
    """

    class Provider(models.TextChoices):
        OPENAI = "openai"
        ANTHROPIC = "anthropic"
        OLLAMA = "ollama"
        SCRIPTED = "scripted", "scripted (server-side demos and tests only)"

    name = models.SlugField(max_length=100, unique=True, help_text="What automations name (providerProfile)")
    provider = models.CharField(max_length=20, choices=Provider.choices)
    model = models.CharField(max_length=200, blank=True, help_text="The provider's model name")
    base_url = models.CharField(
        max_length=500, blank=True, help_text="Empty: the provider's default. https only, unless internal."
    )
    secret_name = models.CharField(
        max_length=100,
        blank=True,
        help_text="NAME of the environment variable holding the key (NAME_FILE is read too); never the key",
    )
    internal = models.BooleanField(
        default=False, help_text="Allow plain http and private/loopback addresses (a model on the local network)"
    )
    options = models.JSONField(
        default=dict, blank=True, help_text='e.g. {"temperature": 0.2, "max_tokens": 2048, "timeout": 60}'
    )
    enabled = models.BooleanField(default=True)
    created_by = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.provider})"

    def clean(self) -> None:
        """The profile rules (sessions/providers/options.py): the base URL through the outbound
        guard, options that cannot carry a URL or key, a secret NAME that is not the platform's."""
        from sessions.providers.options import profile_errors

        errors = profile_errors(
            provider=self.provider,
            model=self.model,
            base_url=self.base_url,
            secret_name=self.secret_name,
            internal=self.internal,
            options=self.options,
        )
        if errors:
            raise ValidationError(errors)

    @property
    def effective_base_url(self) -> str:
        """Where calls go: the profile's URL, or the provider's default (scripted has none)."""
        from sessions.providers.options import DEFAULT_BASE_URLS

        return self.base_url or DEFAULT_BASE_URLS.get(self.provider, "")

    def secret_value(self) -> str:
        """The key, read now (never stored, never shown): it goes into the provider's request
        headers and nowhere else."""
        return secrets.value(self.secret_name, prefix=secrets.PROVIDER_KEY_PREFIX)

    @property
    def secret_status(self) -> str:
        return secrets.status(self.secret_name, prefix=secrets.PROVIDER_KEY_PREFIX)


class Automation(models.Model):
    """A SEED session run again and again: on a schedule, by hand, or on an event.

    An automation with a provider profile is hosted: the server calls the profile's model itself.
    The tick moves ``next_run_at`` through governance/kernel/rows.py: that write bypasses save()
    and the pre_save/post_save signals (tests/governance/kernel/test_rows.py).
    """

    class Trigger(models.TextChoices):
        MANUAL = "MANUAL"
        SCHEDULED = "SCHEDULED"
        EVENT = "EVENT"

    DEFAULT_INTERVAL_MINUTES = 60

    agent = models.ForeignKey("agents.Agent", on_delete=models.PROTECT, related_name="automations")
    name = models.CharField(max_length=200)
    seed_session = models.ForeignKey(AISession, on_delete=models.PROTECT, related_name="+")
    trigger = models.CharField(max_length=10, choices=Trigger.choices, default=Trigger.SCHEDULED)
    interval_minutes = models.PositiveIntegerField(null=True, blank=True, help_text="For SCHEDULED automations")
    crontab = models.ForeignKey(
        "django_celery_beat.CrontabSchedule",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="For SCHEDULED automations, instead of an interval: runs at the times this cron names",
    )
    event = models.CharField(
        max_length=30,
        blank=True,
        choices=[("job.finished", "A job finished"), ("learning.promoted", "A learning was promoted")],
        help_text="For EVENT automations: the platform event that runs it (seed 003's EVENT trigger)",
    )
    event_filter = models.JSONField(
        default=dict,
        blank=True,
        help_text='For EVENT automations: job.finished {"agent", "intent", "status": [...]}, '
        'learning.promoted {"domain", "scope"}; empty: every such event',
    )
    enabled = models.BooleanField(default=True)
    next_run_at = models.DateTimeField(null=True, blank=True)
    profile = models.ForeignKey(
        ProviderProfile,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="automations",
        help_text="Set to host the session: the server calls this profile's model",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=200)

    objects = AutomationQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        indexes = [
            models.Index(fields=["next_run_at"], name="automation_due", condition=Q(enabled=True, trigger="SCHEDULED"))
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(interval_minutes__isnull=True) | Q(crontab__isnull=True), name="automation_one_schedule"
            )
        ]

    def __str__(self) -> str:
        return self.name

    def _cron(self) -> cron_rules.Cron | None:
        row = self.crontab
        if row is None:
            return None
        return cron_rules.Cron(row.minute, row.hour, row.day_of_month, row.month_of_year, row.day_of_week)

    @property
    def cron(self) -> str | None:
        """The cron expression of the schedule (five fields), None for an interval."""
        expression = self._cron()
        return None if expression is None else str(expression)

    @property
    def schedule(self) -> str:
        """The schedule as an operator reads it (admin list)."""
        if self.crontab is not None:
            return f"cron {self.cron} ({self.crontab.timezone})"
        return f"every {self.interval_minutes} min" if self.interval_minutes else "—"

    def next_run_after(self, moment: datetime) -> datetime:
        """When a SCHEDULED run is next due after ``moment``: the cron's next time in its time
        zone, or one interval later (an hour when neither is set, as before cron existed)."""
        expression = self._cron()
        if expression is not None and self.crontab is not None:
            return cron_rules.next_after(expression, moment, self.crontab.timezone)
        return moment + timedelta(minutes=self.interval_minutes or self.DEFAULT_INTERVAL_MINUTES)

    def next_run_following(self, due: datetime, now: datetime) -> datetime:
        """When the run after the one due at ``due`` (its scheduledExecutionTime) is due, never
        before ``now``. Seed 003's AutomationScheduler computes the next execution from history:
        from the slot the last run was due in, not from the tick that started it, so an interval
        keeps its cadence however late the ticks come (a 5-minute tick would otherwise push an
        hourly run later at every run). Slots missed while nothing ticked are skipped, not
        caught up: one run stands for them."""
        following = self.next_run_after(due)
        if following > now:
            return following
        if self.crontab is not None:
            return self.next_run_after(now)
        step = following - due
        return due + step * ((now - due) // step + 1)

    @property
    def provider(self) -> str:
        """The hosting profile's provider, "" when the agent calls its model itself."""
        return self.profile.provider if self.profile_id else ""

    @property
    def provider_config(self) -> dict[str, Any]:
        """The hosting profile's options (the processor reads a scripted one's ``simulate_actions``).
        URL and key are not in here: sessions/hosted.py reads them from the profile's columns."""
        return dict(self.profile.options) if self.profile_id else {}


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
