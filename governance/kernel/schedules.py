"""Default periodic tasks, seeded into django-celery-beat's tables by data migrations.

Each app's data migration calls ``seed`` with its own entries. ``get_or_create`` by name means an
operator's edits in the admin (interval, enabled flag) are never overwritten; a schedule an
operator wants gone is disabled there, not deleted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils import timezone


@dataclass(frozen=True)
class Schedule:
    name: str
    task: str
    every_seconds: int
    description: str
    enabled: bool = True


def seed(apps: Any, schedules: list[Schedule]) -> None:
    interval_model = apps.get_model("django_celery_beat", "IntervalSchedule")
    periodic_model = apps.get_model("django_celery_beat", "PeriodicTask")
    for entry in schedules:
        interval, _ = interval_model.objects.get_or_create(every=entry.every_seconds, period="seconds")
        periodic_model.objects.get_or_create(
            name=entry.name,
            defaults={
                "task": entry.task,
                "interval": interval,
                "enabled": entry.enabled,
                "description": entry.description,
            },
        )
    # Tell a running beat to reload its schedule.
    changed_model = apps.get_model("django_celery_beat", "PeriodicTasks")
    changed_model.objects.update_or_create(ident=1, defaults={"last_update": timezone.now()})


HEARTBEAT = Schedule(
    name="heartbeat",
    task="governance.heartbeat",
    every_seconds=60,
    description="Proves the beat -> broker -> worker path; its last run shows in /api/v1/health.",
)

ESCALATION_TIMEOUTS = Schedule(
    name="escalation timeouts",
    task="agents.escalation_timeouts",
    every_seconds=300,
    description="Re-escalates escalations not handled within their timeout_hours, then expires them.",
)

SESSION_TICK = Schedule(
    name="session scheduler tick",
    task="sessions.tick",
    every_seconds=300,
    description="Fires due session timers, closes idle sessions, expires review requests, starts queued "
    "and scheduled sessions on free slots.",
)

MEMORY_SCHEDULES = [
    Schedule("memory promotions", "memory.promote", 24 * 3600, "Recomputes reuse scores, then proposes promotions."),
    Schedule("memory eviction", "memory.evict", 24 * 3600, "Archives learnings older than 56 days never injected."),
    Schedule("memory embeddings catch-up", "memory.embed_missing", 3600, "Embeds rows that have no vector yet."),
]

RETENTION = Schedule(
    name="retention",
    task="governance.retention",
    every_seconds=24 * 3600,
    description="Archives or prunes what grows without bound, per the RETENTION_* settings; "
    "each run is a Retention run row.",
)

REVIEW_EXPIRY = Schedule(
    name="review expiry",
    task="reviews.expire_due",
    every_seconds=60,
    description="Expires the pending review items past their deadline (tool approvals, action approvals, "
    "questions, agents' approval requests...): a decision after the deadline is refused.",
)

NOTIFICATIONS_RESEND = Schedule(
    name="notifications resend",
    task="notifications.resend_due",
    every_seconds=300,
    description="Queues again the notification deliveries whose attempt is overdue (a broker outage, a lost worker).",
)
