"""What a worker writes on a live job: GraphState updates, then the AgentOutput, checked against
the manifest's post-conditions and declared outputs (and the contracts they name), with what a
finished job brings (KPIs, escalations, artifacts, the job.finished listeners, a follow-up)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agents import artifacts, escalations, hooks, kpi_alerts, kpis
from agents import types as typelang
from agents.envelope import AgentOutput, GraphStateUpdate, JobEnvelopeIn, chain_depth
from agents.jobs.leases import lock_for_change
from agents.jobs.submission import evaluate, submit_job
from agents.kpi import backoff_seconds
from agents.models import Job
from agents.registry import manifest_types
from governance.contracts import services as contracts
from governance.kernel import metrics
from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Conflict, Forbidden, InvalidInput, NotFound
from governance.kernel.principals import SYSTEM, Principal
from governance.kernel.services import record


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


# Not durable: load_demo runs each app's demo, which calls this, in one transaction.
@transaction.atomic
def update_state(job: Job, update: GraphStateUpdate, *, actor: Principal, writer: str | None = None) -> Job:
    """``writer``: the worker writing (the API passes X-Lease-Owner or the key prefix); an
    in-process caller that leaves it out writes as the lease holder of the ``job`` it passes
    (the one claim_lease returned it)."""
    job = lock_for_change(job, actor, writer=job.lease_owner if writer is None else writer)
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


# Not durable: load_demo runs each app's demo, which calls this, in one transaction.
@transaction.atomic
def submit_result(job: Job, output: AgentOutput, *, actor: Principal, writer: str | None = None) -> dict[str, Any]:
    """Store the AgentOutput, check post-conditions, record KPIs, fire escalations, then finish
    the job (or schedule its retry). Returns what the agent needs to know. ``writer`` as for
    update_state."""
    job = lock_for_change(job, actor, writer=job.lease_owner if writer is None else writer)
    now = timezone.now()
    context = output.evaluation_context(job.payload)
    post = evaluate(job.manifest.document["validation"]["post_conditions"], context)
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
        after_finish(job)
        if job.status == Job.Status.SUCCEEDED and output.nextAction == "continue":
            follow_up = _continue(job, output)
    return {
        "status": job.status,
        "postConditions": job.post_conditions,
        "escalation": escalations.describe(escalation) if escalation else None,
        "nextAttemptAt": job.next_attempt_at if job.status == Job.Status.QUEUED else None,
        "nextJobId": follow_up.job_id if follow_up is not None else None,
    }


def after_finish(job: Job) -> None:
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


@transaction.atomic(durable=True)
def escalate(job: Job, reason: str, *, actor: Principal) -> dict[str, Any]:
    """The owner agent escalates the live job it works on with its own reason: 409 before the job
    started (nothing was tried yet) and while an escalation of it is still open (one at a time,
    so a looping agent cannot flood the inbox)."""
    job = lock_for_change(job, actor)
    if job.started_at is None:
        raise Conflict("The job has not started: lease it before escalating it.")
    if job.escalations.filter(status__in=escalations.ACTIVE).exists():
        raise Conflict("The job already has an open escalation.")
    return escalations.describe(escalations.asked_by_agent(job, reason, actor=actor))
