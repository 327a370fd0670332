"""Jobs: submission with idempotency, leases, GraphState updates and results.

Each public function is one transaction that locks the job row it changes. The manifest is
enforced at both ends (seed 001, R1 and R2): a job whose payload does not match the declared
inputs is refused (422, nothing written), and a result whose data does not match the declared
outputs, or breaks the contract an output names, fails the job with the paths of what is wrong.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from uuid import UUID, uuid4

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import DateTimeField, Q
from django.db.models.expressions import RawSQL
from django.utils import timezone

from agents import artifacts, conditions, escalations, hooks, kpi_alerts, kpis, registries, skills
from agents import types as typelang
from agents.envelope import (
    MAX_TIMEOUT_MS,
    AgentOutput,
    GraphStateUpdate,
    JobEnvelopeIn,
    KeyFieldMissing,
    chain_depth,
    content_hash,
)
from agents.kpi import backoff_seconds
from agents.models import Agent, IdempotencyKey, Job
from agents.models.job import PRIORITY_RANK
from agents.registry import manifest_document, manifest_types
from agents.vocabulary import Registry
from governance.contracts import services as contracts
from governance.kernel import metrics, rows
from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Conflict, Forbidden, InvalidInput, NotFound
from governance.kernel.periodic import Failures
from governance.kernel.principals import SYSTEM, Principal
from governance.kernel.services import record


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


@dataclass(frozen=True)
class Admission:
    """An envelope the agent's active manifest accepts, and what submitting it would store."""

    agent: Agent
    manifest_id: int
    key: str
    pre_conditions: list[dict[str, Any]]


def _submitter(actor: Principal) -> Agent:
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
    agent = _submitter(actor)
    check_registries(envelope)
    manifest_id = agent.active_manifest_id
    pre_conditions = _check_admissible(agent, manifest_id, envelope)
    return Admission(agent, manifest_id, idempotency_key(envelope), pre_conditions)


def validate_job(envelope: JobEnvelopeIn, *, actor: Principal) -> dict[str, Any]:
    """What POST /jobs would decide, without writing: the checks raise as they would there;
    otherwise the key it would use, and the job it would replay if one holds the key."""
    replay = _replay(_submitter(actor), idempotency_key(envelope), envelope, timezone.now())  # 409 first, as there
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
    agent = _submitter(actor)
    key = idempotency_key(envelope)
    now = timezone.now()
    replay = _replay(agent, key, envelope, now)
    if replay is not None:  # the common replay: no checks to redo, no write
        return replay, False
    admission = admit(envelope, actor=actor)
    manifest_id, pre_conditions = admission.manifest_id, admission.pre_conditions
    job_id = envelope.jobId or uuid4()
    try:
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


def _output_result(
    name: str | None, code: str, expression: str, found: list[dict[str, Any]], unchecked: tuple[str, ...] = ()
) -> dict[str, Any]:
    """One output check in the shape of a post-condition result, so the answer, the job,
    audit.md and backlog.json show it where they show what held after the run."""
    return {
        "expression": expression,
        "error_code": code,
        "passed": not found,
        "error": "; ".join(f"{'.'.join(map(str, v['loc'][1:]))}: {v['msg']}" for v in found[:5]) or None,
        "check": "output",
        "output": name,
        "violations": found,
        **({"unchecked": list(unchecked)} if unchecked else {}),
    }


def _check_outputs(job: Job, output: AgentOutput) -> list[dict[str, Any]]:
    """R2 on a successful result: each declared output's type, then the contract it names (one
    ContractCheck linked to the job per checked value). Paths start at `data`."""
    declared = manifest_types(job.manifest_id)
    data = output.data
    if not declared.outputs:
        return []
    if not isinstance(data, dict):
        msg = f"data must be an object of the declared outputs, got {typelang.json_kind(data)}"
        return [_output_result(None, "OUTPUT_TYPE", "data: object", [{"loc": ["data"], "msg": msg, "type": "type"}])]
    results = []
    for spec in declared.outputs:
        if spec.text or spec.name not in data:  # a contract-only output is still required
            fields = [(spec.name, spec.type, spec.required)]
            found = typelang.check_fields(fields, data, schemas=declared.schemas, what="output")
            expression = f"{spec.name}: {spec.text or 'required'}"
            violations = [v.as_dict(("data",)) for v in found]
            results.append(_output_result(spec.name, "OUTPUT_TYPE", expression, violations, spec.unchecked))
        if spec.contract and spec.name in data:
            results.append(_contract_result(job, spec, data[spec.name]))
    return results


def _contract_result(job: Job, spec: typelang.Declared, value: Any) -> dict[str, Any]:
    """Validate one output with the contract validator (the service behind POST
    /contracts/{name}/validate) and store the check, linked to the job."""
    expression = f"{spec.name}: contract {spec.contract}"
    try:
        contract = contracts.current(spec.contract)
    except NotFound:  # checked at load; only a catalog emptied since then gets here
        msg = f"contract {spec.contract!r} is no longer in the catalog"
        found = [{"loc": ["data", spec.name], "msg": msg, "type": "unknown_contract"}]
        return _output_result(spec.name, "OUTPUT_CONTRACT", expression, found)
    submission = contracts.Submission(contract, value, job_id=job.pk, agent=job.agent)
    (check,) = contracts.check([submission], principal=Principal(agent=job.agent))
    found = [
        {"loc": ["data", spec.name, *_path(v["path"])], "msg": v["message"], "type": v["code"]}
        for v in check.violations
    ]
    result = _output_result(spec.name, "OUTPUT_CONTRACT", f"{expression} v{contract.version}", found)
    result["contractCheckId"] = check.pk
    return result


def _path(path: str) -> list[str | int]:
    """A contract violation's JSON path (`items[0].id`, `$`) as loc segments."""
    segments: list[str | int] = []
    for part in path.replace("[", ".[").split("."):
        if part in ("", "$"):
            continue
        segments.append(int(part[1:-1]) if part.startswith("[") and part[1:-1].isdigit() else part)
    return segments


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


def timeout_at(job: Job):
    """When ``constraints.timeout`` (ms, counted from the first start) runs out; None before a start.
    A timeout stored before it was bounded counts as the longest a job may have (MAX_TIMEOUT_MS):
    taken as it is, 10**15 ms would overflow the datetime."""
    timeout = job.constraints.get("timeout")
    if job.started_at is None or not timeout:
        return None
    return job.started_at + timedelta(milliseconds=min(timeout, MAX_TIMEOUT_MS))


def _locked(job: Job, actor: Principal, *, writer: str | None = None) -> Job:
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


@transaction.atomic
def claim_lease(job: Job, *, actor: Principal, owner: str, ttl_seconds: int | None = None) -> Job:
    """Take or renew the job's lease. A lease held by someone else is refused until it expires;
    an expired one is taken over (counting a new attempt)."""
    job = _locked(job, actor)
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


@transaction.atomic
def lease_next(*, actor: Principal, owner: str, ttl_seconds: int | None = None) -> Job | None:
    """Lease the calling agent's next job: critical, then high, normal and low priority, oldest
    first within each; None when nothing is ready. Workers leasing at once skip the rows another
    is taking (SKIP LOCKED), so each gets a different job."""
    agent = _submitter(actor)
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


@transaction.atomic
def update_state(job: Job, update: GraphStateUpdate, *, actor: Principal, writer: str | None = None) -> Job:
    """``writer``: the worker writing (the API passes X-Lease-Owner or the key prefix); an
    in-process caller that leaves it out writes as the lease holder of the ``job`` it passes
    (the one claim_lease returned it)."""
    job = _locked(job, actor, writer=job.lease_owner if writer is None else writer)
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
        max_docs = job.constraints.get("maxDocs")
        if max_docs is not None and budget.get("docsRetrieved", 0) > max_docs:
            raise Conflict(
                f"Document budget exceeded: {budget['docsRetrieved']} retrieved of {max_docs}.",
                docsRetrieved=budget["docsRetrieved"],
                maxDocs=max_docs,
            )
        limit = job.constraints.get("budget")
        if limit is not None and budget.get("costUsed", 0) > limit:
            raise Conflict(
                f"Cost budget exceeded: ${budget['costUsed']} spent of ${limit}.",
                costUsed=budget["costUsed"],
                budget=limit,
            )
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
    record(actor=actor, action=AuditAction.JOB_STATE_UPDATED, target=job, node=job.current_node)
    return job


@transaction.atomic
def submit_result(job: Job, output: AgentOutput, *, actor: Principal, writer: str | None = None) -> dict[str, Any]:
    """Store the AgentOutput, check post-conditions, record KPIs, fire escalations, then finish
    the job (or schedule its retry). Returns what the agent needs to know. ``writer`` as for
    update_state."""
    job = _locked(job, actor, writer=job.lease_owner if writer is None else writer)
    now = timezone.now()
    context = output.evaluation_context(job.payload)
    post = _evaluate(job.manifest.document["validation"]["post_conditions"], context)
    checked = _check_outputs(job, output) if output.success else []
    breached = any(not r["passed"] for r in checked)
    job.output = output.model_dump(mode="json")
    job.post_conditions = post + checked
    escalation = escalations.fire(job, output, context)
    # A result that breaks its manifest did not succeed, whatever it says: KPIs count it so (and,
    # being recorded after the escalation step, count whether the job was escalated).
    samples = kpis.record_samples(job, output.model_copy(update={"success": False}) if breached else output, at=now)
    kpi_alerts.check(job, samples, at=now)
    succeeded = output.success and all(r["passed"] for r in job.post_conditions)
    retry = not succeeded and not breached and escalation is None and output.nextAction != "escalate"
    if retry and job.attempts < settings.JOB_LOCK_RETRY:
        delay = backoff_seconds(max(job.attempts, 1), settings.JOB_RETRY_BASE_SECONDS, settings.JOB_LOCK_BACKOFF)
        job.status, job.next_attempt_at = Job.Status.QUEUED, now + timedelta(seconds=delay)
    else:
        job.status = Job.Status.SUCCEEDED if succeeded else Job.Status.FAILED
        job.finished_at = now
    job.lease_owner, job.lease_expires_at = "", None
    job.save()
    record(actor=actor, action=AuditAction.JOB_RESULT_SUBMITTED, target=job, status=job.status, success=output.success)
    hooks.JOB_MEMORY.get().record_gate(job, output.data, actor=actor)  # a gate verdict feeds reuse scores (seed 004)
    follow_up = None
    if job.is_finished:
        _after_finish(job)
        if job.status == Job.Status.SUCCEEDED and output.nextAction == "continue":
            follow_up = _continue(job, output)
    return {
        "status": job.status,
        "postConditions": job.post_conditions,
        "escalation": escalations.describe(escalation) if escalation else None,
        "nextAttemptAt": job.next_attempt_at if job.status == Job.Status.QUEUED else None,
        "nextJobId": follow_up.job_id if follow_up is not None else None,
    }


def _after_finish(job: Job) -> None:
    """What every final status brings, whoever ended the job (its agent or the sweeper): the
    artifacts, the escalation step of a job it was escalated to, the job.finished triggers, and
    its count in the metrics."""
    metrics.count_on_commit(metrics.JOBS_FINISHED, job.agent.agent_id, job.status)
    artifacts.generate(job)
    escalations.child_job_finished(job)
    for listener in hooks.JOB_FINISHED:
        listener(job)


def _continue(job: Job, output: AgentOutput) -> Job | None:
    """``nextAction: "continue"`` (seed 001 AgentOutput): the follow-up job, submitted through
    ``submit_job`` as the agent would, in the same trace, under the finished job, with its
    payload plus what it produced (``continuation``). One follow-up per job (its key), and at most
    JOB_MAX_CONTINUATIONS in a row. A follow-up the manifest refuses is recorded, and the result
    that asked for it still stands."""
    previous = job.payload.get("continuation") if isinstance(job.payload, dict) else None
    depth = chain_depth(previous)
    if depth >= settings.JOB_MAX_CONTINUATIONS:
        record(actor=SYSTEM, action=AuditAction.JOB_CONTINUATION_STOPPED, target=job, depth=depth)
        return None
    envelope = JobEnvelopeIn.model_validate(
        {
            "traceId": job.trace_id,
            "parentJobId": job.job_id,
            "intent": job.intent,
            "scope": job.scope,
            "payload": {
                **job.payload,
                "continuation": {"fromJob": str(job.job_id), "depth": depth + 1, "data": output.data},
            },
            "constraints": job.constraints,
            "context": job.context,
            "idempotencyKey": f"continue:{job.job_id}",
        }
    )
    try:
        with transaction.atomic():
            follow_up, _ = submit_job(envelope, actor=Principal(agent=job.agent))
    except (Forbidden, InvalidInput, Conflict) as exc:
        record(actor=SYSTEM, action=AuditAction.JOB_CONTINUATION_REFUSED, target=job, detail=exc.detail)
        return None
    record(actor=SYSTEM, action=AuditAction.JOB_CONTINUED, target=job, nextJob=str(follow_up.job_id))
    return follow_up


@transaction.atomic
def escalate(job: Job, reason: str, *, actor: Principal) -> dict[str, Any]:
    """The owner agent escalates the live job it works on with its own reason: 409 before the job
    started (nothing was tried yet) and while an escalation of it is still open (one at a time,
    so a looping agent cannot flood the inbox)."""
    job = _locked(job, actor)
    if job.started_at is None:
        raise Conflict("The job has not started: lease it before escalating it.")
    if job.escalations.filter(status__in=escalations.ACTIVE).exists():
        raise Conflict("The job already has an open escalation.")
    return escalations.describe(escalations.asked_by_agent(job, reason, actor=actor))


# --- The sweeper: every job ends ------------------------------------------------------------

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
    _after_finish(job)
