"""Jobs: submission with idempotency, leases, GraphState updates and results.

Each public function is one transaction that locks the job row it changes.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import UUID, uuid4

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from agents import artifacts, conditions, escalations, kpis
from agents.envelope import AgentOutput, GraphStateUpdate, JobEnvelopeIn
from agents.kpi import backoff_seconds
from agents.models import Agent, IdempotencyKey, Job
from agents.registry import manifest_document
from governance.exceptions import Conflict, Forbidden, InvalidInput
from governance.principals import Principal


def _evaluate(specs: list[dict[str, Any]], context: dict[str, Any]) -> list[dict[str, Any]]:
    """Each condition with whether it held; one that cannot be evaluated did not hold."""
    results = []
    for spec in specs:
        try:
            passed, error = conditions.holds(spec["expression"], context), None
        except conditions.ConditionError as exc:
            passed, error = False, str(exc)
        results.append(
            {"expression": spec["expression"], "error_code": spec["error_code"], "passed": passed, "error": error}
        )
    return results


def _input_context(envelope: JobEnvelopeIn) -> dict[str, Any]:
    scope = envelope.scope.model_dump(mode="json")
    return {**envelope.payload, "input": envelope.payload, "scope": scope, "intent": envelope.intent.value}


def _check_admissible(agent: Agent, manifest_id: int | None, envelope: JobEnvelopeIn) -> list[dict[str, Any]]:
    """R1 and the manifest's own rules; returns the pre-condition results (all passed)."""
    if manifest_id is None:
        raise Forbidden(f"R1: agent {agent.agent_id!r} has no active manifest, so it may not run jobs.")
    document = manifest_document(manifest_id)
    intents = document.get("intents")
    if intents is not None and envelope.intent.value not in intents:
        raise Forbidden(
            f"Intent {envelope.intent.value!r} is not among the intents of {agent.agent_id} {document['version']}.",
            allowed_intents=intents,
        )
    if envelope.expiresAt is not None and envelope.expiresAt <= timezone.now():
        msg = "expiresAt is in the past"
        raise InvalidInput(msg, errors=[{"loc": ["body", "expiresAt"], "msg": msg, "type": "expired"}])
    if envelope.parentJobId is not None and not Job.objects.filter(pk=envelope.parentJobId).exists():
        msg = f"no job {envelope.parentJobId}"
        raise InvalidInput(msg, errors=[{"loc": ["body", "parentJobId"], "msg": msg, "type": "not_found"}])
    results = _evaluate(document["validation"]["pre_conditions"], _input_context(envelope))
    failed = [r for r in results if not r["passed"]]
    if failed:
        raise InvalidInput(
            "Pre-conditions of the manifest do not hold.",
            errors=[
                {
                    "loc": ["body", "payload"],
                    "msg": f"{r['expression']} does not hold" + (f" ({r['error']})" if r["error"] else ""),
                    "type": r["error_code"],
                }
                for r in failed
            ],
        )
    return results


def submit_job(envelope: JobEnvelopeIn, *, actor: Principal) -> tuple[Job, bool]:
    """Create the job, or return the one already created under the same idempotency key within
    the result TTL. Returns (job, created)."""
    if actor.agent is None:
        raise Forbidden("Jobs are submitted by agents, with an agent key.")
    agent = actor.agent
    key = envelope.idempotency_key()
    now = timezone.now()
    replay = _live_claim(agent, key, now)
    if replay is not None:  # the common replay: no checks to redo, no write
        return replay, False
    manifest_id = agent.active_manifest_id
    pre_conditions = _check_admissible(agent, manifest_id, envelope)
    job_id = envelope.jobId or uuid4()
    try:
        with transaction.atomic():
            if not _claim(agent, key, job_id, now):
                # Held by a submission that committed first: replay it.
                return _live_claim(agent, key, now), False
            job = Job.objects.create(
                job_id=job_id,
                trace_id=envelope.traceId or uuid4(),
                parent_id=envelope.parentJobId,
                agent=agent,
                manifest_id=manifest_id,
                intent=envelope.intent.value,
                scope=envelope.scope.model_dump(mode="json"),
                payload=envelope.payload,
                constraints=envelope.constraints.model_dump(mode="json"),
                context=envelope.context.model_dump(mode="json"),
                priority=envelope.context.priority.value,
                idempotency_key=key,
                expires_at=envelope.expiresAt,
                budget=_initial_budget(envelope.constraints.maxTokens),
                pre_conditions=pre_conditions,
            )
    except IntegrityError as exc:
        raise Conflict(f"A job with id {envelope.jobId} already exists.", jobId=str(envelope.jobId)) from exc
    return job, True


def _live_claim(agent: Agent, key: str, now) -> Job | None:
    claim = (
        IdempotencyKey.objects.filter(agent=agent, key=key, expires_at__gt=now)
        .select_related("job")
        .only("job")
        .first()
    )
    if claim is None:
        return None
    claim.job.agent = agent
    return claim.job


def _claim(agent: Agent, key: str, job_id: UUID, now) -> bool:
    """Claim ``key`` for ``job_id`` in one statement: insert it, or take it over when its TTL has
    run out. False when a live claim holds it. A concurrent identical submission waits on the
    unique index until the first one commits, then finds the key held: exactly one job. The
    foreign key to the job is checked at commit (Django creates it DEFERRABLE), so the job can
    be inserted after its claim."""
    table = IdempotencyKey._meta.db_table
    expires = now + timedelta(seconds=settings.JOB_RESULT_TTL_SECONDS)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {table} (agent_id, key, job_id, expires_at) VALUES (%s, %s, %s, %s)
            ON CONFLICT (agent_id, key) DO UPDATE SET job_id = EXCLUDED.job_id, expires_at = EXCLUDED.expires_at
                WHERE {table}.expires_at <= %s
            RETURNING id
            """,
            [agent.pk, key, job_id, expires, now],
        )
        return cursor.fetchone() is not None


def _initial_budget(max_tokens: int) -> dict[str, int]:
    return {"tokensUsed": 0, "tokensRemaining": max_tokens, "docsRetrieved": 0, "apiCalls": 0}


def _locked(job: Job) -> Job:
    locked = Job.objects.select_for_update(of=("self",)).select_related("agent", "manifest").get(pk=job.pk)
    if locked.is_finished:
        raise Conflict(f"Job {locked.job_id} is {locked.status}; it takes no more changes.", jobStatus=locked.status)
    return locked


@transaction.atomic
def claim_lease(job: Job, *, owner: str, ttl_seconds: int | None = None) -> Job:
    """Take or renew the job's lease. A lease held by someone else is refused until it expires;
    an expired one is taken over (counting a new attempt)."""
    job = _locked(job)
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
    job.save(update_fields=["lease_owner", "lease_expires_at", "attempts", "status", "started_at"])
    return job


@transaction.atomic
def update_state(job: Job, update: GraphStateUpdate) -> Job:
    job = _locked(job)
    budget = dict(job.budget)
    if update.budget is not None:
        for field, value in update.budget.model_dump(exclude_none=True).items():
            if value < budget.get(field, 0):
                msg = f"{field} is a running total and cannot go down ({budget[field]} -> {value})"
                raise InvalidInput(msg, errors=[{"loc": ["body", "budget", field], "msg": msg, "type": "decreasing"}])
            budget[field] = value
        remaining = job.constraints["maxTokens"] - budget["tokensUsed"]
        if remaining < 0:
            raise Conflict(
                f"Token budget exceeded: {budget['tokensUsed']} used of {job.constraints['maxTokens']}.",
                tokensRemaining=remaining,
            )
        budget["tokensRemaining"] = remaining
    visited = [*job.visited_nodes, *update.visitedNodes]
    if update.currentNode is not None and update.currentNode != job.current_node:
        job.current_node = update.currentNode
        visited.append(update.currentNode)
    job.visited_nodes = visited
    job.budget = budget
    job.intermediate = {**job.intermediate, **update.intermediate}
    job.errors = [*job.errors, *(error.model_dump(mode="json") for error in update.errors)]
    if update.retryCount is not None:
        job.retry_count = update.retryCount
    if job.status == Job.Status.QUEUED:
        job.status, job.started_at = Job.Status.RUNNING, timezone.now()
    job.save()
    return job


@transaction.atomic
def submit_result(job: Job, output: AgentOutput) -> dict[str, Any]:
    """Store the AgentOutput, check post-conditions, record KPIs, fire escalations, then finish
    the job (or schedule its retry). Returns what the agent needs to know."""
    job = _locked(job)
    now = timezone.now()
    context = output.evaluation_context(job.payload)
    post = _evaluate(job.manifest.document["validation"]["post_conditions"], context)
    job.output = output.model_dump(mode="json")
    job.post_conditions = post
    kpis.record_samples(job, output, at=now)
    escalation = escalations.fire(job, output, context)
    succeeded = output.success and all(r["passed"] for r in post)
    retry = not succeeded and escalation is None and output.nextAction != "escalate"
    if retry and job.attempts < settings.JOB_LOCK_RETRY:
        delay = backoff_seconds(max(job.attempts, 1), settings.JOB_RETRY_BASE_SECONDS, settings.JOB_LOCK_BACKOFF)
        job.status, job.next_attempt_at = Job.Status.QUEUED, now + timedelta(seconds=delay)
    else:
        job.status = Job.Status.SUCCEEDED if succeeded else Job.Status.FAILED
        job.finished_at = now
    job.lease_owner, job.lease_expires_at = "", None
    job.save()
    if job.is_finished:
        artifacts.generate(job)
        escalations.child_job_finished(job)
    return {
        "status": job.status,
        "postConditions": post,
        "escalation": escalations.describe(escalation) if escalation else None,
        "nextAttemptAt": job.next_attempt_at if job.status == Job.Status.QUEUED else None,
    }
