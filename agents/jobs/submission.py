"""Submitting a job: the admission every door shares (POST /jobs and /jobs/validate, MCP, triggers,
follow-ups, escalations), and the idempotency key claimed in the statement that decides between a
new job and a replay."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from uuid import UUID, uuid4

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from agents import conditions, registries, skills
from agents.envelope import JobEnvelopeIn, KeyFieldMissing, content_hash
from agents.models import Agent, IdempotencyKey, Job
from agents.registry import manifest_document, manifest_types
from agents.vocabulary import Registry
from governance.kernel import rows
from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Conflict, Forbidden, InvalidInput
from governance.kernel.principals import Principal
from governance.kernel.services import record


def evaluate(specs: list[dict[str, Any]], context: dict[str, Any]) -> list[dict[str, Any]]:
    """Each condition with whether it held; one that cannot be evaluated did not hold. Pre-conditions
    (at admission) and post-conditions (on the result) are judged alike."""
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
    return {**envelope.payload, "input": envelope.payload, "scope": scope, "intent": envelope.intent}


def _check_admissible(agent: Agent, manifest_id: int | None, envelope: JobEnvelopeIn) -> list[dict[str, Any]]:
    """R1 and the manifest's own rules; returns the pre-condition results (all passed)."""
    if manifest_id is None:
        raise Forbidden(f"R1: agent {agent.agent_id!r} has no active manifest, so it may not run jobs.")
    document = manifest_document(manifest_id)
    unusable = skills.unusable_required_skills(document)
    if unusable:
        raise Forbidden(
            f"{agent.agent_id} {document['version']} cannot run its required skills today: "
            + "; ".join(unusable)
            + ". An operator fixes the skill registry or loads a manifest that grants what the skills need."
        )
    intents = document.get("intents")
    if intents is not None and envelope.intent not in intents:
        raise Forbidden(
            f"Intent {envelope.intent!r} is not among the intents of {agent.agent_id} {document['version']}.",
            allowed_intents=intents,
        )
    if envelope.expiresAt is not None and envelope.expiresAt <= timezone.now():
        msg = "expiresAt is in the past"
        raise InvalidInput(msg, errors=[{"loc": ["body", "expiresAt"], "msg": msg, "type": "expired"}])
    if envelope.parentJobId is not None:
        parent_agent = Job.objects.filter(pk=envelope.parentJobId).values_list("agent_id", flat=True).first()
        if parent_agent is None:
            msg = f"no job {envelope.parentJobId}"
            raise InvalidInput(msg, errors=[{"loc": ["body", "parentJobId"], "msg": msg, "type": "not_found"}])
        if parent_agent != agent.pk:
            # Linking under another agent's job would put work into its trace and artifacts.
            raise Forbidden(f"Job {envelope.parentJobId} belongs to another agent; it cannot be a parent here.")
    violations = manifest_types(manifest_id).check_inputs(envelope.payload)
    if violations:
        raise InvalidInput(
            f"The payload does not match the inputs of {agent.agent_id} {document['version']}.",
            errors=[v.as_dict(prefix=("body", "payload")) for v in violations],
        )
    results = evaluate(document["validation"]["pre_conditions"], _input_context(envelope))
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


@dataclass(frozen=True)
class Admission:
    """An envelope the agent's active manifest accepts, and what submitting it would store."""

    agent: Agent
    manifest_id: int
    key: str
    pre_conditions: list[dict[str, Any]]


def submitter(actor: Principal) -> Agent:
    """The agent whose key calls: jobs are an agent's work, so submitting and leasing need one."""
    if actor.agent is None:
        raise Forbidden("Jobs are submitted by agents, with an agent key.")
    return actor.agent


def idempotency_key(envelope: JobEnvelopeIn) -> str:
    """The envelope's key under the configured strategy (JOB_KEY_STRATEGY, JOB_KEY_FIELDS); a
    strategy that needs a missing field is a 422 at that field."""
    try:
        return envelope.idempotency_key(settings.JOB_KEY_STRATEGY, settings.JOB_KEY_FIELDS)
    except KeyFieldMissing as exc:
        raise InvalidInput(str(exc), errors=[{"loc": ["body", *exc.loc], "msg": str(exc), "type": "missing"}]) from exc


def check_registries(envelope: JobEnvelopeIn) -> None:
    """The intent and entity type are active values of their registries (one query); a job
    admitted before a value was retired goes on with it."""
    registries.check(
        [
            registries.Use(Registry.INTENTS, envelope.intent, ("body", "intent")),
            registries.Use(Registry.ENTITY_TYPES, envelope.scope.entityType, ("body", "scope", "entityType")),
        ]
    )


def admit(envelope: JobEnvelopeIn, *, actor: Principal) -> Admission:
    """Every check a submission passes (registries, R1, intents, expiry, parent, inputs,
    pre-conditions), without writing: the one code path of POST /jobs and POST /jobs/validate."""
    agent = submitter(actor)
    check_registries(envelope)
    manifest_id = agent.active_manifest_id
    pre_conditions = _check_admissible(agent, manifest_id, envelope)
    return Admission(agent, manifest_id, idempotency_key(envelope), pre_conditions)


def validate_job(envelope: JobEnvelopeIn, *, actor: Principal) -> dict[str, Any]:
    """What POST /jobs would decide, without writing: the checks raise as they would there;
    otherwise the key it would use, and the job it would replay if one holds the key."""
    replay = _replay(submitter(actor), idempotency_key(envelope), envelope, timezone.now())  # 409 first, as there
    admission = admit(envelope, actor=actor)
    return {
        "valid": True,
        "idempotencyKey": admission.key,
        "replayOf": replay.job_id if replay is not None else None,
        "preConditions": admission.pre_conditions,
    }


def submit_job(envelope: JobEnvelopeIn, *, actor: Principal) -> tuple[Job, bool]:
    """Create the job, or return the one already created under the same idempotency key within
    the result TTL. Returns (job, created)."""
    agent = submitter(actor)
    key = idempotency_key(envelope)
    now = timezone.now()
    replay = _replay(agent, key, envelope, now)
    if replay is not None:  # the common replay: no checks to redo, no write
        return replay, False
    admission = admit(envelope, actor=actor)
    manifest_id, pre_conditions = admission.manifest_id, admission.pre_conditions
    job_id = envelope.jobId or uuid4()
    try:
        # Not durable: triggers, follow-ups and the demo submit inside a transaction of their own.
        with transaction.atomic():
            if not _claim(agent, key, job_id, now):
                # Held by a submission that committed first: replay it.
                return _replay(agent, key, envelope, now), False
            job = Job.objects.create(
                job_id=job_id,
                trace_id=envelope.traceId or uuid4(),
                parent_id=envelope.parentJobId,
                agent=agent,
                manifest_id=manifest_id,
                intent=envelope.intent,
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
            record(actor=actor, action=AuditAction.JOB_SUBMITTED, target=job, intent=job.intent, key=key)
    except IntegrityError as exc:
        raise Conflict(f"A job with id {envelope.jobId} already exists.", jobId=str(envelope.jobId)) from exc
    return job, True


def _replay(agent: Agent, key: str, envelope: JobEnvelopeIn, now) -> Job | None:
    """The job a live claim on ``key`` holds, to replay. A key the caller chose stands for one
    piece of work: the same key with other content (intent, scope, payload, constraints) is a
    409 IDEMPOTENCY_KEY_REUSED, not a replay of unrelated work. A key the server computed from
    the content cannot collide so."""
    job = _live_claim(agent, key, now)
    if job is not None and envelope.idempotencyKey is not None:
        held = content_hash(job.intent, job.scope, job.payload, job.constraints)
        if held != envelope.content_hash():
            raise Conflict(
                f"Idempotency key {key!r} was used for other content by job {job.job_id} "
                f"within the result TTL; use another key for other work.",
                code="IDEMPOTENCY_KEY_REUSED",
                idempotencyKey=key,
                jobId=str(job.job_id),
            )
    return job


@functools.cache
def _live_claim_sql() -> str:
    """The job a live claim holds, in one statement written once (governance/kernel/rows.py):
    every submission and every replay reads it first."""
    quote = connection.ops.quote_name
    job_link, agent_link = (quote(rows.foreign_key(IdempotencyKey, name)[1]) for name in ("job", "agent"))
    return (
        f"SELECT {rows.select_list(Job, 'j')} FROM {quote(IdempotencyKey._meta.db_table)} c"
        f" JOIN {quote(Job._meta.db_table)} j ON j.{quote(Job._meta.pk.column)} = c.{job_link}"
        f" WHERE c.{agent_link} = %s AND c.key = %s AND c.expires_at > %s"
    )


def _live_claim(agent: Agent, key: str, now) -> Job | None:
    row = rows.fetch_one(_live_claim_sql(), [agent.pk, key, now])  # (agent, key) is unique: one row at most
    if row is None:
        return None
    job = rows.instance(Job, row)
    if job is not None:
        job.agent = agent
    return job


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
