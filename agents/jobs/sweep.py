"""The sweeper (beat task ``agents.sweep_jobs``): every job ends, even one nobody will finish."""

from __future__ import annotations

import functools
import json
from datetime import timedelta
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import transaction
from django.db.models import DateTimeField, Q
from django.db.models.expressions import RawSQL
from django.utils import timezone

from agents import escalations, kpi_alerts, kpis
from agents.envelope import MAX_TIMEOUT_MS, AgentOutput
from agents.jobs.leases import timeout_at
from agents.jobs.results import after_finish
from agents.kpi import backoff_seconds
from agents.models import Job
from governance.kernel.audit import AuditAction
from governance.kernel.periodic import Failures
from governance.kernel.principals import SYSTEM
from governance.kernel.services import record

SWEEP_BATCH = 500
_JOB = Job._meta.db_table
# timeout_at in SQL, bounded the same way; a timeout that is not a number gives no deadline here
# (the candidates query must not fail for the whole fleet), and the job's own sweep reports it.
_TIMEOUT_AT = RawSQL(
    f"CASE WHEN jsonb_typeof({_JOB}.constraints->'timeout') = 'number' THEN {_JOB}.started_at"
    f" + LEAST(GREATEST(({_JOB}.constraints->>'timeout')::numeric, 0), %s) * interval '1 millisecond' END",
    [MAX_TIMEOUT_MS],
    output_field=DateTimeField(),
)


def _due(now) -> Q:
    """Live jobs the sweeper has something to do with (rechecked on the locked row)."""
    return Q(status__in=[Job.Status.QUEUED, Job.Status.RUNNING]) & (
        Q(expires_at__lte=now) | Q(timeout_at__lte=now) | Q(status=Job.Status.RUNNING, lease_expires_at__lte=now)
    )


def sweep(*, now=None, batch: int = SWEEP_BATCH) -> dict[str, Any]:
    """Beat task body (``agents.sweep_jobs``): end or re-queue the jobs nobody will finish.

    * past ``expiresAt``: expired (artifacts, no escalation: the submitter's deadline passed);
    * past ``constraints.timeout`` since the first start: failed (no retry: the clock does not
      restart), with artifacts, an escalation per the manifest and a failed KPI sample;
    * a lease expired: re-queued with backoff while attempts remain (``JOB_LOCK_RETRY``),
      otherwise failed like a timeout.

    Each job is decided in its own transaction on its row lock, taken with SKIP LOCKED: two
    sweepers share the work, a job a worker is writing right now waits for the next run, and a
    job already handled no longer qualifies (so running it twice changes nothing). A job whose
    sweep raises is counted under ``errors``, logged, and ended (``_unsweepable``); the others
    are swept all the same."""
    now = now or timezone.now()
    counts = {"requeued": 0, "failed": 0, "expired": 0, "timed_out": 0}
    failures = Failures("jobs")
    candidates = list(
        Job.objects.annotate(timeout_at=_TIMEOUT_AT).filter(_due(now)).order_by().values_list("pk", flat=True)[:batch]
    )
    for pk in candidates:
        # Not durable: periodic's guard holds each job in a savepoint when the run is inside a transaction.
        with failures.guard(f"job {pk}", mark=functools.partial(_unsweepable, pk, now=now)), transaction.atomic():
            job = (
                Job.objects.select_for_update(of=("self",), skip_locked=True)
                .select_related("agent", "manifest")
                .filter(pk=pk)
                .first()
            )
            outcome = _sweep_one(job, now) if job is not None else None
            if outcome is not None:
                counts[outcome] += 1
    return {**counts, **failures.as_dict()}


def _unsweepable(pk: UUID, error: Exception, *, now) -> None:
    """A job the sweeper could not handle ends failed with the error among its errors, so the
    next runs leave it alone: in one statement, without what an end usually brings (KPI sample,
    escalation, artifacts), since those read the same row that just failed."""
    reason = f"the job sweeper could not handle this job ({type(error).__name__}: {error})"[:1000]
    entry = {"node": None, "message": reason, "timestamp": now.isoformat(), "recoverable": False}
    ended = Job.objects.filter(pk=pk, status__in=[Job.Status.QUEUED, Job.Status.RUNNING]).update(
        status=Job.Status.FAILED,
        finished_at=now,
        lease_owner="",
        lease_expires_at=None,
        errors=RawSQL(f"COALESCE({_JOB}.errors, '[]'::jsonb) || %s::jsonb", [json.dumps([entry])]),
    )
    if ended:
        record(actor=SYSTEM, action=AuditAction.JOB_SWEEP_FAILED, target=Job(pk=pk), error=reason)


def _sweep_one(job: Job, now) -> str | None:
    if job.is_finished:
        return None
    if job.expires_at is not None and job.expires_at <= now:
        _end(job, Job.Status.EXPIRED, f"expired at {job.expires_at.isoformat()}", now)
        return "expired"
    deadline = timeout_at(job)
    if deadline is not None and deadline <= now:
        _end(job, Job.Status.FAILED, f"timeout of {job.constraints['timeout']} ms exceeded", now)
        return "timed_out"
    if job.status != Job.Status.RUNNING or job.lease_expires_at is None or job.lease_expires_at > now:
        return None
    retry = job.attempts < settings.JOB_LOCK_RETRY
    record(
        actor=SYSTEM,
        action=AuditAction.JOB_LEASE_EXPIRED,
        target=job,
        owner=job.lease_owner,
        attempt=job.attempts,
        requeued=retry,
    )
    if not retry:
        _end(job, Job.Status.FAILED, f"lease expired after {job.attempts} attempts", now)
        return "failed"
    delay = backoff_seconds(max(job.attempts, 1), settings.JOB_RETRY_BASE_SECONDS, settings.JOB_LOCK_BACKOFF)
    job.status, job.next_attempt_at = Job.Status.QUEUED, now + timedelta(seconds=delay)
    job.lease_owner, job.lease_expires_at = "", None
    job.save(update_fields=["status", "next_attempt_at", "lease_owner", "lease_expires_at"])
    return "requeued"


# The audit action of each status the platform ends a job with.
_ENDED = {Job.Status.FAILED: AuditAction.JOB_FAILED, Job.Status.EXPIRED: AuditAction.JOB_EXPIRED}


def _end(job: Job, status: Job.Status, reason: str, now) -> None:
    """Finish a job the platform ends: the reason among its errors, then (when failed) an
    escalation per the manifest and the KPI samples of a failed run, then its artifacts."""
    job.status, job.finished_at = status, now
    job.lease_owner, job.lease_expires_at = "", None
    job.errors = [
        *job.errors,
        {"node": job.current_node, "message": reason, "timestamp": now.isoformat(), "recoverable": False},
    ]
    job.save()
    record(actor=SYSTEM, action=_ENDED[status], target=job, reason=reason, attempts=job.attempts)
    if status == Job.Status.FAILED:
        escalations.open_for(job, reason)
        kpi_alerts.check(job, kpis.record_samples(job, AgentOutput(success=False), at=now, from_result=False), at=now)
    after_finish(job)
