"""Leases: which worker holds a job now, and the lock every change takes, which refuses a job that
is no longer live (finished, expired, past its timeout) or a writer that no longer holds the lease."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from agents import hooks
from agents.envelope import MAX_TIMEOUT_MS
from agents.jobs.submission import submitter
from agents.models import Job
from agents.models.job import PRIORITY_RANK
from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Conflict, Forbidden
from governance.kernel.principals import Principal
from governance.kernel.services import record


def timeout_at(job: Job):
    """When ``constraints.timeout`` (ms, counted from the first start) runs out; None before a start.
    A timeout stored before it was bounded counts as the longest a job may have (MAX_TIMEOUT_MS):
    taken as it is, 10**15 ms would overflow the datetime."""
    timeout = job.constraints.get("timeout")
    if job.started_at is None or not timeout:
        return None
    return job.started_at + timedelta(milliseconds=min(timeout, MAX_TIMEOUT_MS))


def lock_for_change(job: Job, actor: Principal, *, writer: str | None = None) -> Job:
    """The job, locked for this change: only the agent that owns it (or the system) drives it,
    and only while it is live: not finished, not past ``expiresAt``, not past its timeout (the
    sweeper records those ends; until it runs, writes are already refused). With ``writer``
    (state and result), only the worker holding the current lease writes; a job never leased
    (no attempt yet) takes writes from its agent without one."""
    if actor.user is not None or (actor.agent is not None and actor.agent.pk != job.agent_id):
        raise Forbidden("Only the agent that owns the job changes it.")
    locked = Job.objects.select_for_update(of=("self",)).select_related("agent", "manifest").get(pk=job.pk)
    if locked.is_finished:
        raise Conflict(f"Job {locked.job_id} is {locked.status}; it takes no more changes.", jobStatus=locked.status)
    now = timezone.now()
    if locked.expires_at is not None and locked.expires_at <= now:
        raise Conflict(
            f"Job {locked.job_id} expired at {locked.expires_at.isoformat()}; it takes no more changes.",
            jobStatus=Job.Status.EXPIRED,
            expiresAt=locked.expires_at,
        )
    deadline = timeout_at(locked)
    if deadline is not None and deadline <= now:
        raise Conflict(
            f"Job {locked.job_id} ran past its timeout of {locked.constraints['timeout']} ms "
            f"({deadline.isoformat()}); it takes no more changes.",
            jobStatus=Job.Status.FAILED,
            timeoutAt=deadline,
        )
    if writer is not None:
        _check_writer(locked, writer, now)
    return locked


def _check_writer(job: Job, writer: str, now) -> None:
    if job.lease_owner and job.lease_owner != writer:
        raise Conflict(
            f"The job is leased by {job.lease_owner}, not {writer}: only the current lease owner writes.",
            leaseOwner=job.lease_owner,
            leaseExpiresAt=job.lease_expires_at,
        )
    if job.lease_owner and (job.lease_expires_at is None or job.lease_expires_at <= now):
        raise Conflict(
            f"The lease of {writer} expired at {job.lease_expires_at.isoformat() if job.lease_expires_at else '-'}; "
            "take the lease again before writing.",
            leaseOwner=job.lease_owner,
            leaseExpiresAt=job.lease_expires_at,
        )
    if not job.lease_owner and job.attempts > 0:
        raise Conflict(
            f"Job {job.job_id} has no live lease (attempt {job.attempts} ended); take the lease before writing.",
            attempts=job.attempts,
            nextAttemptAt=job.next_attempt_at,
        )


# Not durable: lease_next leases in its own transaction; load_demo runs the demo, which calls this, in one.
@transaction.atomic
def claim_lease(job: Job, *, actor: Principal, owner: str, ttl_seconds: int | None = None) -> Job:
    """Take or renew the job's lease. A lease held by someone else is refused until it expires;
    an expired one is taken over (counting a new attempt)."""
    job = lock_for_change(job, actor)
    now = timezone.now()
    if job.next_attempt_at is not None and job.next_attempt_at > now:
        raise Conflict(f"Retry not before {job.next_attempt_at.isoformat()}.", nextAttemptAt=job.next_attempt_at)
    held = job.lease_owner and job.lease_expires_at is not None and job.lease_expires_at > now
    if held and job.lease_owner != owner:
        raise Conflict(
            f"The job is leased by {job.lease_owner} until {job.lease_expires_at.isoformat()}.",
            leaseOwner=job.lease_owner,
            leaseExpiresAt=job.lease_expires_at,
        )
    if not held:
        if job.attempts >= settings.JOB_LOCK_RETRY:
            raise Conflict(f"The job has used its {settings.JOB_LOCK_RETRY} attempts.", attempts=job.attempts)
        job.attempts += 1
    job.lease_owner = owner
    job.lease_expires_at = now + timedelta(seconds=ttl_seconds or settings.JOB_LOCK_TTL_SECONDS)
    job.status = Job.Status.RUNNING
    job.started_at = job.started_at or now
    fields = ["lease_owner", "lease_expires_at", "attempts", "status", "started_at"]
    if job.rag_context is None:
        # RAG FOURNIT (seed 001): the step-0 block for this job, kept so the audit shows what the
        # agent was told. Built once, at the first lease; it never fails (sections degrade).
        job.rag_context = hooks.JOB_MEMORY.get().context_for_job(job, actor=actor)
        fields.append("rag_context")
    job.save(update_fields=fields)
    record(
        actor=actor, action=AuditAction.JOB_LEASED, target=job, owner=owner, attempt=job.attempts, renewed=bool(held)
    )
    return job


@transaction.atomic(durable=True)
def lease_next(*, actor: Principal, owner: str, ttl_seconds: int | None = None) -> Job | None:
    """Lease the calling agent's next job: critical, then high, normal and low priority, oldest
    first within each; None when nothing is ready. Workers leasing at once skip the rows another
    is taking (SKIP LOCKED), so each gets a different job."""
    agent = submitter(actor)
    now = timezone.now()
    job = (
        Job.objects.select_for_update(of=("self",), skip_locked=True)
        .filter(agent=agent, status=Job.Status.QUEUED)
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .order_by(PRIORITY_RANK, "created_at")
        .first()
    )
    return claim_lease(job, actor=actor, owner=owner, ttl_seconds=ttl_seconds) if job is not None else None
