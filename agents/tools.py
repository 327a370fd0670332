"""Tool calls: agents record each call of a manifest tool before making it, and the platform
enforces the tool's permission, its rate limit (calls per minute, sliding window) and, for a
tool whose manifest entry requires approval, a reviewer's approval of that very call.

The limit holds across web workers and hosts: calls of one (agent, tool) take turns on a
transaction-level advisory lock, then count the calls of the last 60 seconds, in one function of
the database (``count_and_record``).

An approval is a :class:`ToolGrant`: bound to the hash of the call's arguments and usable once.
The first request opens a review item and answers "pending" (within the agent's pending limit,
shared with every other way it asks a human: past it, RateLimited and nothing is opened); asking
again with the same arguments while it is pending answers the same item, limit or not; once a
reviewer approved, the next request with the same arguments is the call, and consumes the grant.
A rejection stands for those arguments: asking again is refused, so an agent cannot wear a
reviewer down by repetition.

A reviewer may approve the call with edited arguments (checked against the tool's input schema
when one is known: an upstream tool's, as an operator approved its definition). The grant is
then bound to the edited arguments' hash, and the arguments the agent asked for are not approved:
asking again with them says what the reviewer approved instead and what changed (a Conflict), so
the agent makes the edited call, which consumes the grant. A caller that makes the call itself
with whatever was approved (the MCP gateway, ``accept_edited``) gets the edited call at once.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from agents import amendments
from agents.models import Agent, Job, ManifestTool, ToolCall, ToolGrant
from agents.registry import manifest_document, manifest_tools
from governance.kernel import metrics, registry, retention
from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Conflict, Forbidden, InvalidInput, RateLimited
from governance.kernel.json_guard import error, json_errors
from governance.kernel.principals import SYSTEM, Principal
from governance.kernel.services import record
from governance.notifications.models import EventKind
from governance.reviews import services as reviews
from governance.reviews.kinds import Payload, ReviewKind
from governance.reviews.models import ReviewDecision, ReviewItem

REVIEW_KIND = "tool_approval"
# A permission covers the intents at or below it: a write or execute grant may be used to read,
# never the other way round.
_COVERS = {"read": {"read"}, "write": {"read", "write"}, "execute": {"read", "execute"}}
# The input schema of a tool, when an app above knows one (the gateway: an upstream tool's, as an
# operator approved its definition); None for a manifest tool, which declares none.
INPUT_SCHEMAS: registry.Slot[Callable[[str], dict[str, Any] | None]] = registry.slot(
    "tool_input_schemas", "the input schema of a tool by its manifest id (gateway: pinned upstream definitions)"
)


@dataclass(frozen=True)
class PendingApproval:
    """The call waits for a reviewer: nothing was called, nothing counted."""

    review_item_id: int
    status: str = "pending"


def _tool(agent: Agent, tool_id: str) -> ManifestTool:
    if agent.active_manifest_id is None:
        raise Forbidden(f"R1: agent {agent.agent_id!r} has no active manifest.")
    tool = manifest_tools(agent.active_manifest_id).get(tool_id)
    if tool is None:
        raise Forbidden(f"Tool {tool_id!r} is not in the manifest of {agent.agent_id}.", tool_id=tool_id)
    return tool


@transaction.atomic(durable=True)
def record_call(
    agent: Agent,
    tool_id: str,
    *,
    actor: Principal,
    permission: str | None = None,
    arguments: dict[str, Any] | None = None,
    job: Job | None = None,
    accept_edited: bool = False,
) -> dict[str, Any] | PendingApproval:
    """Record one call, or ask a reviewer first when the tool requires approval. The answer's
    ``argumentsEdited`` says when the approval used is for arguments a reviewer edited: the call
    is to be made with those. ``accept_edited``: the caller makes the call itself with whatever
    was approved, so asking with the original arguments uses an edited approval at once."""
    if not actor.owns(agent):
        raise Forbidden("Only the agent itself records its tool calls.")
    tool = _tool(agent, tool_id)
    if job is not None:
        _check_job(job)
    if permission is not None and permission not in _COVERS.get(tool.permission, set()):
        raise Forbidden(
            f"Tool {tool_id!r} is granted {tool.permission!r}, not {permission!r}.",
            tool_id=tool_id,
            granted=tool.permission,
        )
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [agent.pk, tool_id])
    now = timezone.now()
    grant = None
    # A dryRun job produces no effects: its calls are recorded as dry, and a dry call of an
    # approval-gated tool asks no reviewer (there is nothing to approve).
    dry = job is not None and bool(job.constraints.get("dryRun"))
    if tool.requires_approval and not dry:
        grant = _approved_grant(
            agent, tool, arguments or {}, job=job, actor=actor, now=now, accept_edited=accept_edited
        )
        if isinstance(grant, PendingApproval):
            return grant
    call_id, used, retry_after, called_at = count_and_record(agent.pk, tool_id, tool.rate_limit, now, job=job, dry=dry)
    if call_id is None:
        raise rate_limited(tool_id, tool.rate_limit, retry_after or 1)
    call = ToolCall(pk=call_id, agent=agent, tool_id=tool_id, job=job, called_at=called_at, dry_run=dry)
    call._state.adding = False  # the row the function wrote
    metrics.count_on_commit(metrics.TOOL_CALLS, agent.agent_id)
    if dry:
        record(actor=actor, action=AuditAction.TOOL_DRY_CALL, target=call, tool_id=tool_id, job=str(job.pk))
    if grant is not None:
        grant.status, grant.used_at, grant.tool_call = ToolGrant.Status.USED, now, call
        grant.save(update_fields=["status", "used_at", "tool_call"])
        record(actor=actor, action=AuditAction.TOOL_GRANT_USED, target=grant, tool_id=tool_id, call=call.pk)
    return {
        "id": call.pk,
        "tool_id": tool_id,
        "permission": tool.permission,
        "requires_approval": tool.requires_approval,
        "rate_limit": tool.rate_limit,
        "remaining": tool.rate_limit - used - 1,
        "called_at": called_at,
        "grantId": grant.pk if grant is not None else None,
        "dryRun": dry,
        "argumentsEdited": _edit_of(grant) if isinstance(grant, ToolGrant) else None,
    }


def rate_limited(tool_id: str, rate_limit: int, retry_after: int) -> RateLimited:
    return RateLimited(
        f"Tool {tool_id!r} allows {rate_limit} calls per minute.",
        retry_after=retry_after,
        tool_id=tool_id,
        rate_limit=rate_limit,
    )


def count_and_record(
    agent_pk: int, tool_id: str, rate_limit: int, now: datetime, *, job: Job | None = None, dry: bool = False
) -> tuple[int | None, int, int | None, datetime]:
    """(the call's id, the calls of the last minute before it, None, its time) once recorded;
    (None, those calls, seconds until a slot frees, now) when the limit is reached. One round
    trip: the (agent, tool) lock, the count (two index probes, see migration 0019) and the row
    are the database's function ``agents_tool_call_record``, which the gateway's admission calls
    too. The call's time is ``now``, or its previous call's if a later one went first."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT a_call, a_used, a_retry_after, a_called_at FROM agents_tool_call_record(%s, %s, %s, %s, %s, %s)",
            [agent_pk, tool_id, rate_limit, now, job.pk if job is not None else None, dry],
        )
        call_id, used, retry_after, called_at = cursor.fetchone()
    return call_id, used, retry_after, called_at


def _check_job(job: Job) -> None:
    """A call made for a job is part of its work: none once the job is finished, none once its
    token or cost budget is spent (seed 001's constraints)."""
    if job.status in Job.FINISHED:
        raise Conflict(f"Job {job.pk} is {job.status}: it makes no more tool calls.", jobStatus=job.status)
    budget, constraints = job.budget, job.constraints
    if budget.get("tokensRemaining", 1) <= 0:
        raise Conflict(
            f"Job {job.pk} has spent its token budget ({budget.get('tokensUsed')} of {constraints.get('maxTokens')}).",
            tokensRemaining=budget.get("tokensRemaining"),
        )
    limit = constraints.get("budget")
    if limit is not None and budget.get("costUsed", 0) >= limit:
        raise Conflict(
            f"Job {job.pk} has spent its cost budget (${budget.get('costUsed')} of ${limit}).",
            costUsed=budget.get("costUsed"),
            budget=limit,
        )


def _approved_grant(
    agent: Agent,
    tool: ManifestTool,
    arguments: dict[str, Any],
    *,
    job: Job | None,
    actor: Principal,
    now: datetime,
    accept_edited: bool,
) -> ToolGrant | PendingApproval:
    """The approved, unused grant for exactly these arguments, or the pending request for them
    (opened now if there is none). Runs under the (agent, tool) advisory lock.

    A grant a reviewer approved with edited arguments is found by the arguments asked for too:
    it is used only by a caller that makes the edited call (``accept_edited``); any other is told
    what was approved instead. Of several grants for the same arguments the pending one counts,
    else the last decided (an edited approval may be decided after a rejection of its arguments)."""
    digest = reviews.payload_hash(arguments)
    latest = (
        ToolGrant.objects.select_for_update()
        .filter(Q(arguments_hash=digest) | Q(requested_hash=digest), agent=agent, tool_id=tool.tool_id)
        .order_by(F("decided_at").desc(nulls_first=True), "-created_at")
        .first()
    )
    if latest is not None and latest.status == ToolGrant.Status.APPROVED:
        if latest.decided_at is not None and now - latest.decided_at > _validity(agent, tool.tool_id):
            _expire_grant(latest, now)
        elif latest.arguments_hash == digest or accept_edited:
            return latest
        else:
            edit = _edit_of(latest)
            raise Conflict(
                f"A reviewer approved this call of {tool.tool_id!r} with edited arguments "
                f"({amendments.describe(edit['changes'] if edit else [])}); the arguments asked for are not "
                "approved: make the call with argumentsEdited.arguments.",
                tool_id=tool.tool_id,
                reviewItemId=latest.review_item_id,
                argumentsEdited=edit,
            )
    elif latest is not None and latest.status == ToolGrant.Status.PENDING:
        return PendingApproval(review_item_id=latest.review_item_id)
    elif latest is not None and latest.status == ToolGrant.Status.REJECTED:
        raise Forbidden(
            f"A reviewer rejected this call of {tool.tool_id!r} with these arguments.",
            tool_id=tool.tool_id,
            reviewItemId=latest.review_item_id,
        )
    payload = {
        "toolId": tool.tool_id,
        "permission": tool.permission,
        "arguments": arguments,
        "argumentsHash": digest,
        "job": str(job.pk) if job is not None else None,
    }
    schema = INPUT_SCHEMAS.get()(tool.tool_id)
    if schema is not None:  # shown with the item, and what a reviewer's edit is checked against
        payload["inputSchema"] = schema
    item = reviews.open_item(
        actor=actor,
        kind=REVIEW_KIND,
        title=f"{agent.agent_id} asks to call {tool.tool_id}",
        agent=agent,
        payload=payload,
        expires_at=now + _validity(agent, tool.tool_id),
    )
    grant = ToolGrant.objects.create(
        agent=agent, tool_id=tool.tool_id, arguments_hash=digest, arguments=arguments, review_item=item, job=job
    )
    record(
        actor=actor, action=AuditAction.TOOL_APPROVAL_REQUESTED, target=grant, tool_id=tool.tool_id, review_item=item.pk
    )
    return PendingApproval(review_item_id=item.pk)


def _validity(agent: Agent, tool_id: str) -> timedelta:
    """How long a request waits for a reviewer, and how long an approval stays usable:
    REVIEW_EXPIRY_HOURS, or the tool's own `approval_timeout_hours` when the manifest sets one."""
    hours = settings.REVIEW_EXPIRY_HOURS
    for entry in manifest_document(agent.active_manifest_id).get("tools", []):
        if entry.get("tool_id") == tool_id and entry.get("approval_timeout_hours"):
            hours = min(hours, entry["approval_timeout_hours"])
    return timedelta(hours=hours)


def _expire_grant(grant: ToolGrant, now) -> None:
    grant.status, grant.decided_at = ToolGrant.Status.EXPIRED, grant.decided_at or now
    grant.save(update_fields=["status", "decided_at"])
    record(actor=SYSTEM, action=AuditAction.TOOL_GRANT_EXPIRED, target=grant, tool_id=grant.tool_id)


_GRANT_AFTER = {
    ReviewDecision.Decision.APPROVE: ToolGrant.Status.APPROVED,
    ReviewDecision.Decision.REJECT: ToolGrant.Status.REJECTED,
    ReviewDecision.Decision.EXPIRE: ToolGrant.Status.EXPIRED,
}


def on_review_decided(item: ReviewItem, decision: ReviewDecision) -> None:
    """The reviewer's decision becomes the grant's status, in the decision's transaction (the
    decision itself, with who and when, is already recorded by governance.reviews.services). An
    approval of edited arguments binds the grant to them, under the (agent, tool) lock calls take
    (taken before the grant's row, in the order calls take them)."""
    if decision.amended is not None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [item.agent_id, item.payload["toolId"]])
    grant = ToolGrant.objects.select_for_update().get(review_item=item)
    status = _GRANT_AFTER.get(ReviewDecision.Decision(decision.decision), ToolGrant.Status.REJECTED)
    grant.status, grant.decided_at = status, decision.decided_at
    fields = ["status", "decided_at"]
    if decision.amended is not None:
        _bind_to_edit(grant, decision.amended)
        fields += ["requested_hash", "arguments_hash", "arguments"]
    grant.save(update_fields=fields)


def _bind_to_edit(grant: ToolGrant, amended: Payload) -> None:
    """The grant covers the edited arguments only; the ones asked for stay its ``requested_hash``,
    which finds it when the agent asks with them again. A request of the agent's for exactly the
    edited arguments already open is a Conflict: that item is the one to decide."""
    digest = amended["argumentsHash"]
    open_grants = ToolGrant.objects.filter(
        agent_id=grant.agent_id,
        tool_id=grant.tool_id,
        arguments_hash=digest,
        status__in=[ToolGrant.Status.PENDING, ToolGrant.Status.APPROVED],
    )
    other = open_grants.exclude(pk=grant.pk).first()
    if other is not None:
        raise Conflict(
            f"The agent already asks for exactly these arguments in item #{other.review_item_id}: decide that one.",
            reason="duplicate",
            reviewItemId=other.review_item_id,
        )
    grant.requested_hash, grant.arguments_hash, grant.arguments = grant.arguments_hash, digest, amended["arguments"]


def _edit_of(grant: ToolGrant) -> dict[str, Any] | None:
    """What an agent is told of a grant a reviewer approved with edited arguments: who edited
    them, the arguments approved and their hash, the hash of those asked for, and each change;
    None for a grant approved as asked."""
    if not grant.requested_hash:
        return None
    decision = ReviewDecision.objects.select_related("user").get(item_id=grant.review_item_id)
    return {
        "reviewItemId": grant.review_item_id,
        "editedBy": decision.decider,
        "arguments": grant.arguments,
        "argumentsHash": grant.arguments_hash,
        "requestedArgumentsHash": grant.requested_hash,
        "changes": (decision.amended or {}).get("changes", []),
    }


def _amend(payload: Payload, arguments: Any) -> dict[str, Any]:
    """The call a reviewer approves instead (``ReviewKind.amend``): their arguments, checked as an
    agent's are (a JSON object the database can store) and against the tool's input schema when
    the item carries one; bound to their hash, with what changed. Unchanged, the item's payload."""
    here = ["body", "arguments"]
    if not isinstance(arguments, dict):
        msg = "the arguments of a tool call are a JSON object"
        raise InvalidInput(f"The edited arguments are not a JSON object: {msg}.", errors=[error(here, msg, "type")])
    if reviews.payload_hash(arguments) == reviews.payload_hash(payload.get("arguments")):
        return dict(payload)
    unstorable = json_errors(arguments, here)
    if unstorable:
        where = "; ".join(f"at {amendments.pointer(e['loc'][2:])}: {e['msg']}" for e in unstorable)
        raise InvalidInput(f"The edited arguments cannot be stored: {where}.", errors=unstorable)
    schema = payload.get("inputSchema")
    failing = amendments.violations(arguments, schema) if isinstance(schema, dict) else []
    if failing:
        where = "; ".join(f"at {violation.at}: {violation.message}" for violation in failing)
        raise InvalidInput(
            f"The edited arguments do not match the tool's input schema: {where}.",
            errors=[error([*here, *violation.path], violation.message, "input_schema") for violation in failing],
        )
    return {
        **payload,
        "arguments": arguments,
        "argumentsHash": reviews.payload_hash(arguments),
        "changes": amendments.changes(payload.get("arguments"), arguments),
    }


def _tool_call(payload: Payload) -> str:
    """What the reviewer decides on: the tool and the exact arguments of the one call it grants."""
    arguments = json.dumps(payload.get("arguments"), sort_keys=True, ensure_ascii=False)
    return f"{payload.get('toolId', '')}({arguments})"


REVIEW = ReviewKind(
    code=REVIEW_KIND,
    label="Tool call",
    template="agents/review_kinds/tool_approval.html",
    summary=_tool_call,
    on_decided=on_review_decided,
    amend=_amend,
    announces_as=EventKind.INBOX_TOOL_APPROVAL,
    asked_by_agent=True,
)


def _old_calls(cutoff: datetime) -> QuerySet[ToolCall]:
    return ToolCall.objects.filter(called_at__lt=cutoff, grant__isnull=True)


# Pruned: a tool call row exists for the rate limit, which looks one minute back. A call that used
# a reviewer's grant is kept with the grant (a decision); a gateway call that named one keeps its
# own record of the call (agent, tool, job, outcome) and loses only the link.
TOOL_CALL_RETENTION = retention.Policy(name="tool calls", action=retention.PRUNE, candidates=_old_calls)
