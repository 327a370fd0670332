"""Scheduled maintenance of the agents app."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from agents import escalations, kpi_alerts, triggers
from agents.jobs.sweep import sweep


@shared_task(name="agents.escalation_timeouts", ignore_result=True, acks_late=True)
def escalation_timeouts() -> dict[str, Any]:
    """Re-escalate escalations not handled in time; expire those already re-escalated (other
    review items past their deadline, approval requests included, are reviews.expire_due's)."""
    return escalations.process_overdue()


@shared_task(name="agents.sweep_jobs", ignore_result=True, acks_late=True)
def sweep_jobs() -> dict[str, Any]:
    """Jobs always end: re-queue or fail those whose lease expired, expire those past expiresAt,
    fail those past constraints.timeout. Idempotent; concurrent runs share the work."""
    return sweep()


@shared_task(name="agents.fire_due_triggers", ignore_result=True, acks_late=True)
def fire_due_triggers() -> dict[str, Any]:
    """Cron job triggers whose slot has come: each fires once per slot (SKIP LOCKED, and the
    slot is the job's idempotency key), however many beats or redeliveries run it."""
    return triggers.fire_due()


@shared_task(name="agents.recheck_kpi_alerts", ignore_result=True, acks_late=True)
def recheck_kpi_alerts() -> dict[str, Any]:
    """Open KPI alerts whose window slid back out of critical are resolved, results or not."""
    return kpi_alerts.recheck_open()
