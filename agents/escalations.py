"""Escalations: fired by a job's result, routed to another agent or to a human reviewer,
re-escalated once when not handled in time, then expired. Every step is kept on the row and
in the audit trail."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import uuid4

from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from agents import conditions
from agents.envelope import AgentOutput, JobEnvelopeIn
from agents.jobs import submission
from agents.models import Agent, Escalation, Job
from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Forbidden, InvalidInput
from governance.kernel.periodic import Failures
from governance.kernel.principals import SYSTEM, Principal
from governance.kernel.services import record
from governance.notifications import services as notifications
from governance.notifications.models import EventKind
from governance.reviews import services as reviews
from governance.reviews.kinds import APPROVE, REJECT, Control, ReviewKind, always
from governance.reviews.models import ReviewDecision, ReviewItem

REVIEW_KIND = "escalation"
ACTIVE = (Escalation.Status.OPEN, Escalation.Status.REESCALATED)


def _step(escalation: Escalation, action: AuditAction, *, by: Principal = SYSTEM, **detail: Any) -> None:
    """Append the step to the escalation's history (named by the action's verb, ``opened``) and audit it."""
    escalation.steps = [
        *escalation.steps,
        {"at": timezone.now().isoformat(), "action": action.value.partition(".")[2], "by": by.label, **detail},
    ]
    record(actor=by, action=action, target=escalation, **detail)


def _fired(triggers: list[str], context: dict[str, Any]) -> list[str]:
    """Triggers that hold. One that cannot be evaluated (say `confidence` was not reported)
    does not fire: escalating on missing data would page people for nothing."""
    fired = []
    for trigger in triggers:
        try:
            if conditions.holds(trigger, context):
                fired.append(trigger)
        except conditions.ConditionError:
            continue
    return fired


def fire(job: Job, output: AgentOutput, context: dict[str, Any]) -> Escalation | None:
    """Evaluate the manifest's triggers on a result; open and route an escalation if any fire."""
    config = job.manifest.document["escalation"]
    fired = _fired(config["triggers"], context)
    if output.nextAction == "escalate":
        fired.append("nextAction == 'escalate'")
    if not fired:
        return None
    return _open(job, fired, human=bool(config["human_required"] or output.human_required))


def open_for(job: Job, trigger: str) -> Escalation:
    """A job the platform ended itself (its lease lost for good, its timeout past): escalated as
    its manifest says (target agent, or the reviewer inbox when `human_required`), with what
    happened as the trigger."""
    return _open(job, [trigger], human=bool(job.manifest.document["escalation"]["human_required"]))


def asked_by_agent(job: Job, reason: str, *, actor: Principal) -> Escalation:
    """The agent escalates its own job (seed 001 AgentContract ``escalate``): its reason is kept
    word for word, and the escalation is routed as the manifest says, as a fired trigger is."""
    config = job.manifest.document["escalation"]
    return _open(job, ["agent asked"], human=bool(config["human_required"]), reason=reason, by=actor)


def _open(job: Job, fired: list[str], *, human: bool, reason: str = "", by: Principal = SYSTEM) -> Escalation:
    config = job.manifest.document["escalation"]
    escalation = Escalation.objects.create(
        job=job,
        triggers=fired,
        reason=reason or f"{job.agent.agent_id}: " + "; ".join(fired),
        human_required=human,
        timeout_hours=config["timeout_hours"],
        deadline=timezone.now() + timedelta(hours=config["timeout_hours"]),
    )
    _step(escalation, AuditAction.ESCALATION_OPENED, by=by, triggers=fired)
    target = Agent.objects.filter(agent_id=config["target_agent"]).select_related("active_manifest").first()
    ready = not human and target is not None and target.active_manifest is not None
    envelope = _child_envelope(escalation) if ready else None
    refused = _admission_refusals(envelope, target) if envelope is not None and target is not None else []
    if envelope is not None and target is not None and not refused:
        _route_to_agent(escalation, target, envelope)
    else:
        if refused:  # the target's own contract (or a registry) would refuse the job: a human decides instead
            _step(
                escalation, AuditAction.ESCALATION_TARGET_REFUSED, targetAgent=config["target_agent"], reasons=refused
            )
        elif not human:
            _step(escalation, AuditAction.ESCALATION_TARGET_UNAVAILABLE, targetAgent=config["target_agent"])
        _route_to_human(escalation)
    escalation.save()
    _announce(escalation)
    return escalation


def _announce(escalation: Escalation, *, overdue: bool = False) -> None:
    """Tell operators: which job, why (the manifest's triggers, never the agent's own words or its
    output), and where it went; the link opens the job. Told again, at once (escalations never
    wait for a digest), when it passed its deadline undecided and went to the inbox, whose item
    the link then opens."""
    job = escalation.job
    title = f"Escalation of {job.intent} job by {job.agent.agent_id}"
    link = reverse("agents:job-detail", args=[job.job_id])
    if overdue:
        title = f"Past its deadline: {title[0].lower()}{title[1:]}"
        if escalation.review_item_id is not None:
            link = reverse("reviews:item", args=[escalation.review_item_id])
    notifications.announce(
        EventKind.ESCALATION,
        agent=job.agent.agent_id,
        domain=job.agent.domain,
        title=title,
        link_path=link,
        facts={
            "agent": job.agent.agent_id,
            "triggers": "; ".join(escalation.triggers),
            "routed to": escalation.target_agent.agent_id if escalation.target_agent else "the reviewer inbox",
            "deadline": escalation.deadline.isoformat(timespec="minutes"),
        },
    )


def _child_envelope(escalation: Escalation) -> JobEnvelopeIn:
    """The job the escalation asks of its target, as the target would be sent it: the escalated job's intent and
    scope, what happened as the payload (the seed's EscalationSchema input), high priority, one per escalation."""
    job = escalation.job
    return JobEnvelopeIn.model_validate(
        {
            "traceId": job.trace_id,
            "intent": job.intent,
            "scope": job.scope,
            "payload": {
                "escalation": {
                    "fromJob": str(job.job_id),
                    "fromAgent": job.agent.agent_id,
                    "triggers": escalation.triggers,
                    "output": job.output,
                }
            },
            "constraints": job.constraints,
            "context": {**job.context, "source": "event", "priority": "high"},
            "idempotencyKey": f"escalation:{escalation.pk}:{uuid4().hex}",
        }
    )


def _admission_refusals(envelope: JobEnvelopeIn, target: Agent) -> list[str]:
    """Why the target's contract refuses the escalated job, through the admission every ``POST /jobs`` passes
    (registries, R1, required skills, intents, inputs, pre-conditions); empty when it admits it. Work the platform
    creates is not let past a door the agent itself would be stopped at."""
    try:
        submission.admit(envelope, actor=Principal(agent=target))
    except InvalidInput as exc:
        return [f"{'.'.join(map(str, e['loc']))}: {e['msg']} ({e['type']})" for e in exc.errors] or [exc.detail]
    except Forbidden as exc:
        return [exc.detail]
    return []


def _route_to_agent(escalation: Escalation, target: Agent, envelope: JobEnvelopeIn) -> None:
    job = escalation.job
    escalation.target_agent = target
    escalation.child_job = Job.objects.create(
        job_id=uuid4(),
        trace_id=job.trace_id,
        parent=job,
        agent=target,
        manifest=target.active_manifest,
        intent=envelope.intent,
        scope=envelope.scope.model_dump(mode="json"),
        payload=envelope.payload,
        constraints=envelope.constraints.model_dump(mode="json"),
        context=envelope.context.model_dump(mode="json"),
        priority="high",
        idempotency_key=submission.idempotency_key(envelope),
        budget={"tokensUsed": 0, "tokensRemaining": job.constraints["maxTokens"], "docsRetrieved": 0, "apiCalls": 0},
    )
    _step(
        escalation,
        AuditAction.ESCALATION_ROUTED_TO_AGENT,
        targetAgent=target.agent_id,
        childJob=str(escalation.child_job.job_id),
    )


def _route_to_human(escalation: Escalation) -> None:
    job = escalation.job
    escalation.review_item = reviews.open_item(
        actor=SYSTEM,
        kind=REVIEW_KIND,
        title=f"Escalation of {job.intent} job by {job.agent.agent_id}",
        agent=job.agent,
        payload={
            "escalation": escalation.pk,
            "job": str(job.job_id),
            "triggers": escalation.triggers,
            "output": job.output,
        },
        expires_at=escalation.deadline,
    )
    _step(escalation, AuditAction.ESCALATION_ROUTED_TO_HUMAN, reviewItem=escalation.review_item.pk)


def child_job_finished(job: Job) -> None:
    """The agent an escalation went to has finished its job: the escalation is handled."""
    for escalation in Escalation.objects.select_for_update().filter(child_job=job, status__in=ACTIVE):
        escalation.status, escalation.handled_at = Escalation.Status.HANDLED, timezone.now()
        _step(escalation, AuditAction.ESCALATION_HANDLED, by=Principal(agent=job.agent), jobStatus=job.status)
        escalation.save()


def on_review_decided(item: ReviewItem, decision: ReviewDecision) -> None:
    """A reviewer decided the inbox item of an escalation: it is handled."""
    escalation = Escalation.objects.select_for_update().filter(review_item=item, status__in=ACTIVE).first()
    if escalation is None or decision.decision == ReviewDecision.Decision.EXPIRE:
        return
    escalation.status, escalation.handled_at = Escalation.Status.HANDLED, timezone.now()
    _step(
        escalation,
        AuditAction.ESCALATION_HANDLED,
        by=Principal(user=decision.user),
        decision=decision.decision,
        comment=decision.comment,
    )
    escalation.save()


def process_overdue() -> dict[str, Any]:
    """Beat task body: an open escalation past its deadline is escalated again (to the reviewer
    inbox, with a new deadline); one already re-escalated and still unhandled expires. Each in its
    own transaction on its row lock (SKIP LOCKED: concurrent runs share the work, and one handled
    meanwhile no longer qualifies); one that raises is reported under ``errors`` and the others
    are handled all the same."""
    counts = {"reescalated": 0, "expired": 0}
    failures = Failures("escalations")
    for pk in list(Escalation.objects.overdue().values_list("pk", flat=True)):
        # Not durable: periodic's guard holds each item in a savepoint when the run is inside a transaction.
        with failures.guard(f"escalation {pk}"), transaction.atomic():
            escalation = (
                Escalation.objects.overdue()
                .select_for_update(skip_locked=True, of=("self",))
                .select_related("job__agent")
                .filter(pk=pk)
                .first()
            )
            if escalation is not None:
                outcome = _overdue(escalation)
                counts[outcome] += 1
    return {**counts, **failures.as_dict()}


def _overdue(escalation: Escalation) -> str:
    if escalation.status == Escalation.Status.OPEN:
        escalation.status = Escalation.Status.REESCALATED
        escalation.deadline = timezone.now() + timedelta(hours=escalation.timeout_hours)
        _step(escalation, AuditAction.ESCALATION_REESCALATED, deadline=escalation.deadline.isoformat())
        if escalation.review_item is None:
            _route_to_human(escalation)
        else:
            ReviewItem.objects.filter(pk=escalation.review_item.pk).update(expires_at=escalation.deadline)
        escalation.save()
        _announce(escalation, overdue=True)
        return "reescalated"
    escalation.status = Escalation.Status.EXPIRED
    _step(escalation, AuditAction.ESCALATION_EXPIRED)
    escalation.save()
    if escalation.review_item is not None and escalation.review_item.status == ReviewItem.Status.PENDING:
        reviews.decide(escalation.review_item.pk, actor=SYSTEM, decision=ReviewDecision.Decision.EXPIRE)
    return "expired"


def describe(escalation: Escalation) -> dict[str, Any]:
    return {
        "id": escalation.pk,
        "status": escalation.status,
        "triggers": escalation.triggers,
        "reason": escalation.reason,
        "targetAgent": escalation.target_agent.agent_id if escalation.target_agent_id else None,
        "humanRequired": escalation.human_required,
        "childJobId": str(escalation.child_job_id) if escalation.child_job_id else None,
        "reviewItemId": escalation.review_item_id,
        "deadline": escalation.deadline.isoformat(),
        "steps": escalation.steps,
    }


# Its row shows the job, the triggers and the output (no text to decide on). It announces itself as
# EventKind.ESCALATION, with its own link, so the inbox does not tell it twice; past its deadline it
# is escalated again once before it expires (process_overdue), so reviews.expire_due leaves it.
REVIEW = ReviewKind(
    code=REVIEW_KIND,
    label="Escalation",
    template="agents/review_kinds/escalation.html",
    controls=always(Control(APPROVE, "Approve (handled)", "approve"), Control(REJECT, "Reject", "reject")),
    on_decided=on_review_decided,
    expires_itself=True,
)
