"""Periodic work of the reviewer inbox (registered with the worker through governance/tasks.py)."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from governance.reviews import services


@shared_task(name="reviews.expire_due", ignore_result=True, acks_late=True)
def expire_due() -> dict[str, Any]:
    """Every minute: pending review items past their deadline are expired, of every kind but
    those their app expires itself (escalations). Idempotent; concurrent runs skip what the other
    decided."""
    return services.expire_due()
