"""Scheduled maintenance of the agents app."""

from __future__ import annotations

from celery import shared_task

from agents import escalations


@shared_task(name="agents.escalation_timeouts", ignore_result=True, acks_late=True)
def escalation_timeouts() -> dict[str, int]:
    """Re-escalate escalations not handled in time; expire those already re-escalated."""
    return escalations.process_overdue()
