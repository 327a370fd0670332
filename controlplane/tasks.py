"""The fleet-wide maintenance task: retention reaches into every app, so it lives with the project."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="governance.retention", ignore_result=True)
def apply_retention() -> dict:
    """Daily: archives or prunes what grows without bound, per the RETENTION_* settings."""
    from controlplane.retention import run_retention
    from governance.kernel.principals import SYSTEM

    return run_retention(actor=SYSTEM).as_dict()
