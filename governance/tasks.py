"""Periodic maintenance of the governance app."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

# The sub-apps' tasks register with the worker through this module (Celery discovers `<app>.tasks`).
from governance.notifications import tasks as notification_tasks
from governance.reviews import tasks as review_tasks

__all__ = ["notification_tasks", "review_tasks"]


@shared_task(name="governance.heartbeat", ignore_result=True)
def heartbeat() -> dict:
    """Does nothing but run: its TaskRun row is the proof that beat, broker and worker all work."""
    return {"at": timezone.now().isoformat()}
