"""Job triggers (seed 001 "MiniLo DECLENCHE"): the platform starting work for an agent."""

from __future__ import annotations

from typing import Any

import pydantic
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q

from agents.envelope import JobEnvelopeIn, Priority, Source
from agents.vocabulary import MAX_VALUE_LENGTH


class _JobFinishedFilter(pydantic.BaseModel):
    """What a ``job.finished`` filter may name (anything else is refused where it is saved)."""

    model_config = pydantic.ConfigDict(extra="forbid")
    agent: str | None = None
    intent: str | None = None
    status: list[str] | None = None


class _LearningPromotedFilter(pydantic.BaseModel):
    """What a ``learning.promoted`` filter may name."""

    model_config = pydantic.ConfigDict(extra="forbid")
    domain: str | None = None
    scope: str | None = None


EVENTS = ("job.finished", "learning.promoted")
_FILTERS: dict[str, type[pydantic.BaseModel]] = {
    "job.finished": _JobFinishedFilter,
    "learning.promoted": _LearningPromotedFilter,
}


def event_filter_errors(event: str, value: Any) -> list[str]:
    """Why ``value`` is not a filter of ``event`` (empty when it is one): job triggers and seed
    003's EVENT automations filter the same events the same way."""
    try:
        _FILTERS[event].model_validate(value or {})
    except pydantic.ValidationError as exc:
        return [f"{'.'.join(map(str, e['loc'])) or 'filter'}: {e['msg']}" for e in exc.errors()]
    return []


class JobTrigger(models.Model):
    """Creates jobs for ``agent`` from a job template, on a cron schedule, on a signed webhook, or
    on a platform event. Every job goes through ``agents.jobs.submission.submit_job``, as an API submission
    does (manifest, intents, inputs and pre-conditions checked), with ``context.source`` naming
    the kind of trigger. Disabled, never deleted: jobs keep pointing at what created them."""

    class Kind(models.TextChoices):
        CRON = "cron", "Cron schedule"
        WEBHOOK = "webhook", "Signed webhook"
        EVENT = "event", "Platform event"

    class Event(models.TextChoices):
        JOB_FINISHED = "job.finished", "A job finished"
        LEARNING_PROMOTED = "learning.promoted", "A learning was promoted"

    name = models.CharField(
        max_length=100,
        unique=True,
        validators=[RegexValidator(r"^[a-z0-9][a-z0-9_-]*$", "Lowercase letters, digits, - and _.")],
        help_text="Also the webhook's address: /api/v1/triggers/<name>/webhook.",
    )
    agent = models.ForeignKey("agents.Agent", on_delete=models.PROTECT, related_name="triggers")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    enabled = models.BooleanField(default=True)
    description = models.TextField(blank=True)

    # The job each firing creates (JobEnvelope fields; the trigger sets context.source).
    intent = models.CharField(max_length=MAX_VALUE_LENGTH, help_text="A value of the intents registry.")
    entity_type = models.CharField(max_length=MAX_VALUE_LENGTH, help_text="A value of the entity types registry.")
    payload = models.JSONField(default=dict, blank=True, help_text="The job's payload (a webhook's body is merged in).")
    constraints = models.JSONField(default=dict, blank=True, help_text="JobEnvelope constraints; defaults when empty.")
    priority = models.CharField(max_length=10, choices=[(p.value, p.value) for p in Priority], default="normal")

    crontab = models.ForeignKey(
        "django_celery_beat.CrontabSchedule",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Cron triggers: when to fire (a django-celery-beat crontab).",
    )
    next_run_at = models.DateTimeField(null=True, blank=True, editable=False)
    event = models.CharField(max_length=30, choices=Event.choices, blank=True)
    event_filter = models.JSONField(
        default=dict,
        blank=True,
        help_text='Event triggers: which events fire it. job.finished: {"agent", "intent", "status": [...]}; '
        'learning.promoted: {"domain", "scope"}. Empty: every event of that kind.',
    )
    secret_version = models.PositiveIntegerField(
        default=1, editable=False, help_text="Webhook triggers: bumped when the secret is rotated."
    )

    fired_count = models.PositiveIntegerField(default=0, editable=False)
    last_fired_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        indexes = [
            models.Index(fields=["next_run_at"], condition=Q(kind="cron", enabled=True), name="trigger_cron_due"),
            models.Index(fields=["event"], condition=Q(kind="event", enabled=True), name="trigger_event"),
        ]

    def __str__(self) -> str:
        return self.name

    def envelope(self, *, key: str, extra_payload: dict[str, Any] | None = None) -> JobEnvelopeIn:
        """The JobEnvelope one firing submits; ``key`` names the firing (its idempotency key).
        pydantic.ValidationError when the template is not a valid envelope."""
        return JobEnvelopeIn.model_validate(
            {
                "intent": self.intent,
                "scope": {"entityType": self.entity_type},
                "payload": {**self.payload, **(extra_payload or {})},
                "constraints": self.constraints or {},
                "context": {"source": Source(self.kind).value, "priority": self.priority},
                "idempotencyKey": f"trigger:{self.name}:{key}"[:200],
            }
        )

    def clean(self) -> None:
        """Refuse, field by field, a trigger that could never fire as configured."""
        errors: dict[str, list[str]] = {}
        for field in ("payload", "constraints"):
            if not isinstance(getattr(self, field), dict):
                errors[field] = [f"The {field} is a JSON object."]
        if not errors:
            try:
                self.envelope(key="check")
            except pydantic.ValidationError as exc:
                for err in exc.errors():
                    field = "constraints" if err["loc"][0] == "constraints" else "payload"
                    errors.setdefault(field, []).append(f"{'.'.join(map(str, err['loc']))}: {err['msg']}")
        if self.kind == self.Kind.CRON and self.crontab_id is None:
            errors["crontab"] = ["A cron trigger needs a crontab."]
        if self.kind == self.Kind.EVENT:
            if not self.event:
                errors["event"] = ["An event trigger names its event."]
            elif problems := event_filter_errors(self.event, self.event_filter):
                errors["event_filter"] = problems
        if errors:
            raise ValidationError(errors)
