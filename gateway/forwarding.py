"""The governed path to upstream tools: which ones an agent's manifest grants, the checks a call
passes before it is forwarded, and the log of every call (``GatewayCall``).

A manifest names an upstream tool ``mcp__<server>__<tool>``; the server is an enabled
:class:`UpstreamServer` of that name. Before anything is forwarded, ``authorize`` runs the same
rule as the REST path (``agents.tools.record_call``: permission, the rate limit shared by every
process, a reviewer's approval bound to the arguments' hash, the named job's state, budget and
dryRun). A refused call is logged (the call log, and the audit trail as every refusal of a key
is) and answered; it never reaches the upstream.

A call may name its job and session in the request's ``_meta`` (``jobId``, ``sessionId``); with
no session named, the agent's active session is the one recorded. Everything here is synchronous
(database); the MCP server runs it with ``sync_to_async``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import mcp_types as types
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from agents import tools as agent_tools
from agents.models import Job
from agents.registry import manifest_tools
from gateway import leaks, outcomes, pins, refusals
from gateway.models import GatewayCall, ToolPin, UpstreamServer
from governance.contracts import services as contracts
from governance.contracts.models import ContractCheck
from governance.kernel import metrics, retention
from governance.kernel.exceptions import DomainError, Forbidden, InvalidInput
from governance.kernel.json_guard import json_errors
from governance.kernel.principals import Principal
from governance.reviews.services import payload_hash
from sessions.models import AISession

if TYPE_CHECKING:
    from gateway.upstream import Address

logger = logging.getLogger(__name__)

PREFIX = "mcp__"
Outcome = GatewayCall.Outcome


@dataclass(frozen=True)
class Grant:
    tool_id: str  # mcp__<server>__<tool>, as the manifest names it
    server: UpstreamServer
    tool: str  # the upstream's own name
    permission: str
    contract: str = ""  # the catalog contract each result is checked against, if any


@dataclass
class Attempt:
    """One call on its way: what the log will say about it."""

    principal: Principal
    tool_id: str
    arguments: dict[str, Any]
    grant: Grant | None = None
    job: Job | None = None
    session: AISession | None = None
    tool_call_id: int | None = None
    dry_run: bool = False
    called_at: Any = field(default_factory=timezone.now)
    # A reviewer approved other arguments than those asked for: ``arguments`` are then the
    # approved ones, forwarded and logged, and this says what changed (agents.tools._edit_of).
    edited: dict[str, Any] | None = None
    # Admitted in one round trip (``admit``): the call's log row, written as forwarded, which
    # ``finish`` completes; and the names of the credentials its result is screened for.
    gateway_call_id: int | None = None
    secret_names: leaks.SecretNames | None = None


class Refused(Exception):
    """The gateway said no (or not yet); the attempt is already logged."""

    def __init__(self, message: str, refusal: str, **extra: Any) -> None:
        super().__init__(message)
        self.message, self.refusal, self.extra = message, refusal, extra


def split(tool_id: str) -> tuple[str, str] | None:
    """(server, tool) of ``mcp__<server>__<tool>``; None for any other name."""
    if not tool_id.startswith(PREFIX):
        return None
    server, sep, tool = tool_id[len(PREFIX) :].partition("__")
    return (server, tool) if sep and server and tool else None


def input_schema(tool_id: str) -> dict[str, Any] | None:
    """The ``inputSchema`` of an upstream tool (``mcp__<server>__<tool>``) as an operator approved
    its definition (gateway/pins.py), which a reviewer's edit of a call's arguments is checked
    against; None for any other tool, or one with no approved definition."""
    parts = split(tool_id)
    if parts is None:
        return None
    approved = ToolPin.objects.filter(server__name=parts[0], tool=parts[1], status=ToolPin.Status.APPROVED)
    definition = approved.values_list("definition", flat=True).first()
    schema = definition.get("inputSchema") if isinstance(definition, dict) else None
    return schema if isinstance(schema, dict) else None


def grants(principal: Principal) -> list[Grant]:
    """The upstream tools the caller's active manifest grants on enabled servers."""
    agent = principal.agent
    if agent is None or agent.active_manifest_id is None:
        return []
    rows = manifest_tools(agent.active_manifest_id).values()
    named = {row.tool_id: (split(row.tool_id), row) for row in rows if row.tool_id.startswith(PREFIX)}
    servers = UpstreamServer.objects.in_bulk(
        [parts[0] for parts, _ in named.values() if parts is not None], field_name="name"
    )
    return [
        Grant(tool_id, servers[parts[0]], parts[1], row.permission, row.contract)
        for tool_id, (parts, row) in sorted(named.items())
        if parts is not None and parts[0] in servers and servers[parts[0]].enabled
    ]


def _log(attempt: Attempt, outcome: str, *, storable: bool = True, **fields: Any) -> None:
    """The attempt's row: written now, or the admitted one completed with its outcome (in the
    caller's transaction)."""
    if attempt.gateway_call_id is not None:
        GatewayCall.objects.filter(pk=attempt.gateway_call_id).update(outcome=outcome, **fields)
        return
    agent = attempt.principal.agent
    assert agent is not None
    GatewayCall.objects.create(
        agent=agent,
        tool_id=attempt.tool_id,
        server=attempt.grant.server if attempt.grant else None,
        job=attempt.job,
        session=attempt.session,
        arguments_hash=payload_hash(attempt.arguments),
        arguments=attempt.arguments if settings.GATEWAY_STORE_ARGUMENTS and storable else None,
        called_at=attempt.called_at,
        outcome=outcome,
        tool_call_id=attempt.tool_call_id,
        **fields,
    )


def refuse(attempt: Attempt, message: str, refusal: str, *, storable: bool = True, **extra: Any) -> Refused:
    """Log a refused attempt (an operator's key has no agent to log) and audit it, count it, and
    build its answer."""
    metrics.TOOL_REFUSALS.labels(refusal).inc()
    if attempt.principal.agent is not None:
        outcome = Outcome.PENDING if refusal == "PendingApproval" else Outcome.REFUSED
        _log(attempt, outcome, storable=storable, refusal=refusal)
    refusals.record(attempt.principal, method="tools/call", name=attempt.tool_id, refusal=refusal, detail=message)
    return Refused(message, refusal, **extra)


def _own(principal: Principal, model: type[Job] | type[AISession], key: Any, name: str) -> Any:
    try:
        found = model._default_manager.filter(pk=key, agent=principal.agent).first()
    except (ValidationError, ValueError):
        found = None
    if found is None:
        msg = f"no {name} {key} of this agent"
        raise InvalidInput(msg, errors=[{"loc": ["_meta", f"{name}Id"], "msg": msg, "type": "not_found"}])
    return found


def _where(principal: Principal, meta: dict[str, Any]) -> tuple[Job | None, AISession | None]:
    """The job and session the call is for: named in ``_meta``, or the agent's active session."""
    job = _own(principal, Job, meta["jobId"], "job") if meta.get("jobId") is not None else None
    if meta.get("sessionId") is not None:
        return job, _own(principal, AISession, meta["sessionId"], "session")
    return job, AISession.objects.filter(agent=principal.agent, is_active=True).first()


def authorize(
    principal: Principal, grant: Grant, arguments: dict[str, Any], *, read_only: bool, meta: dict[str, Any]
) -> Attempt:
    """The attempt, recorded as a call (``ToolCall``) the rate limit counts; or ``Refused``. A
    ``read`` grant reaches only a tool its upstream marks read-only: any write, however harmless,
    under a read grant would skip the reviewer a write grant asks for."""
    attempt = Attempt(principal, grant.tool_id, arguments, grant=grant)
    if principal.agent is None:
        raise refuse(attempt, "Only agents call upstream tools.", "Forbidden")
    unstorable = json_errors(arguments, ["arguments"])
    if unstorable:
        raise refuse(
            attempt, "The arguments cannot be stored; see errors.", "InvalidInput", storable=False, errors=unstorable
        )
    try:
        attempt.job, attempt.session = _where(principal, meta)
        if grant.permission == "read" and not read_only:
            raise Forbidden(
                f"{grant.tool_id} is granted read, and it may change data: the upstream does not mark it "
                "read-only (readOnlyHint, false when unsaid).",
                tool_id=grant.tool_id,
            )
        # The gateway makes the call itself: an approval of edited arguments is used at once, with those.
        allowed = agent_tools.record_call(
            principal.agent, grant.tool_id, actor=principal, arguments=arguments, job=attempt.job, accept_edited=True
        )
    except DomainError as exc:
        raise refuse(attempt, exc.detail, type(exc).__name__, **exc.data()) from exc
    if isinstance(allowed, agent_tools.PendingApproval):
        raise refuse(
            attempt,
            f"{grant.tool_id} with these arguments waits for a reviewer; "
            "call again with the same arguments once approved.",
            "PendingApproval",
            reviewItemId=allowed.review_item_id,
        )
    attempt.tool_call_id, attempt.dry_run = allowed["id"], allowed["dryRun"]
    attempt.edited = allowed["argumentsEdited"]
    if attempt.edited is not None:
        attempt.arguments = attempt.edited["arguments"]
    if attempt.dry_run:
        _log(attempt, Outcome.DRY_RUN)
    return attempt


def hints(annotations: types.ToolAnnotations | None) -> tuple[bool, bool]:
    """(read-only, destructive) of an upstream tool, with MCP's defaults for what it does not say:
    not read-only, and then destructive. A tool that says nothing is a tool that may delete."""
    read_only = bool(annotations and annotations.read_only_hint)
    if read_only:
        return True, False
    said = annotations.destructive_hint if annotations else None
    return False, True if said is None else said


def admit(
    principal: Principal,
    tool_id: str,
    arguments: dict[str, Any],
    meta: dict[str, Any],
    kept: Callable[[str], tuple[Address, list[types.Tool]] | None],
) -> Attempt | None:
    """The common call admitted in one round trip: the checks of ``prepare`` for a tool that needs
    no reviewer, named without a job or a session, on an HTTP upstream this process listed lately,
    run by the database's ``gateway_call_admit`` (gateway migration 0009) with the call's log row
    written (``forwarded``) before anything is forwarded. None, with nothing written, for every
    other case (and whenever the server's row or the tool's approved definition is not what this
    process knows): ``prepare`` decides it the long way. ``Refused`` past the rate limit.
    ``kept``: the address and tool list this process keeps of a server, by name
    (gateway/upstream.py ``Pool.kept``, passed in: this module loads with the app, the pool
    and its telemetry only where calls are made)."""
    agent, parts = principal.agent, split(tool_id)
    if agent is None or agent.active_manifest_id is None or parts is None:
        return None
    if meta.get("jobId") is not None or meta.get("sessionId") is not None:
        return None
    row = manifest_tools(agent.active_manifest_id).get(tool_id)
    listed = kept(parts[0])
    if row is None or row.requires_approval or listed is None:
        return None
    address, tools = listed
    tool = next((t for t in tools if t.name == parts[1]), None)
    if tool is None or (row.permission == "read" and not hints(tool.annotations)[0]):
        return None
    if json_errors(arguments, ["arguments"]):
        return None
    now = timezone.now()
    stored = json.dumps(arguments) if settings.GATEWAY_STORE_ARGUMENTS else None
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT * FROM gateway_call_admit(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb)",
            [
                agent.pk,
                tool_id,
                parts[0],
                parts[1],
                address.url,
                address.internal,
                address.secret_name,
                _digests(tools).get(parts[1], ""),
                row.rate_limit,
                now,
                payload_hash(arguments),
                stored,
            ],
        )
        status, server, session, call_id, logged, _, retry_after, upstream_names, provider_names = cursor.fetchone()
    if status == "other":
        return None
    grant = Grant(tool_id, _server(server), parts[1], row.permission, row.contract)
    attempt = Attempt(principal, tool_id, arguments, grant=grant, called_at=now, tool_call_id=call_id)
    if status == "rate_limited":
        exc = agent_tools.rate_limited(tool_id, row.rate_limit, retry_after)
        raise refuse(attempt, exc.detail, "RateLimited", **exc.data())
    metrics.count_on_commit(metrics.TOOL_CALLS, agent.agent_id)
    attempt.session = AISession(pk=session) if session is not None else None
    attempt.gateway_call_id, attempt.secret_names = logged, leaks.SecretNames(upstream_names, provider_names)
    return attempt


def _server(row: str) -> UpstreamServer:
    """The server's row as the admission read it (its JSON: Django leaves jsonb undecoded), as a
    model instance."""
    fields = json.loads(row)
    server = UpstreamServer(**{f.attname: f.to_python(fields[f.column]) for f in UpstreamServer._meta.concrete_fields})
    server._state.adding = False
    return server


_DIGESTS: dict[int, tuple[list[types.Tool], dict[str, str]]] = {}


def _digests(tools: list[types.Tool]) -> dict[str, str]:
    """Each tool's digest as the lock compares it (gateway/pins.py), computed once per kept list."""
    kept = _DIGESTS.get(id(tools))
    if kept is None or kept[0] is not tools:
        if len(_DIGESTS) > 256:
            _DIGESTS.clear()
        kept = _DIGESTS[id(tools)] = (tools, {name: one.digest for name, one in pins.listed(tools).items()})
    return kept[1]


@dataclass(frozen=True)
class NeedsList:
    """The upstream's tool list is not at hand: fetch it (async), then prepare again."""

    server: UpstreamServer


def prepare(
    principal: Principal,
    tool_id: str,
    arguments: dict[str, Any],
    meta: dict[str, Any],
    listed: Callable[[UpstreamServer], list[types.Tool] | None],
) -> Attempt | NeedsList:
    """Everything before the forward in one trip to the database thread: the grant, the
    upstream's definition of the tool (``listed``: the kept list, None when there is none), the
    lock on that definition (gateway/pins.py), and ``authorize``. Raises ``Refused``."""
    grant = next((g for g in grants(principal) if g.tool_id == tool_id), None)
    if grant is None:
        raise unknown(principal, tool_id, arguments)
    tools = listed(grant.server)
    if tools is None:
        return NeedsList(grant.server)
    tool = next((t for t in tools if t.name == grant.tool), None)
    if tool is None:
        raise unknown(principal, tool_id, arguments)
    if not any(t.name == grant.tool for t in pins.admitted(grant.server, tools)):
        raise refuse(
            Attempt(principal, tool_id, arguments, grant=grant),
            f"{tool_id} is withheld: its upstream lists a definition of it that no operator approved "
            "(changed, new or flagged), and a reviewer was asked. Nothing was forwarded.",
            pins.REFUSAL,
        )
    read_only, _ = hints(tool.annotations)
    return authorize(principal, grant, arguments, read_only=read_only, meta=meta)


def unknown(principal: Principal, tool_id: str, arguments: dict[str, Any]) -> Refused:
    """A name the caller's manifest does not grant (or whose upstream is down): logged too, since
    an agent probing for tools is worth an operator's eye."""
    return refuse(Attempt(principal, tool_id, arguments), f"No tool {tool_id!r} for this key.", "NotGranted")


def _output(result: types.CallToolResult) -> Any:
    """What a contract checks: the structured result, else the text (as JSON when it is)."""
    if result.structured_content is not None:
        return result.structured_content
    text = "".join(block.text for block in result.content if isinstance(block, types.TextContent))
    try:
        return json.loads(text)
    except ValueError:
        return text


def finish(
    attempt: Attempt,
    *,
    latency_ms: float,
    result: types.CallToolResult | None = None,
    error_class: str = "",
    screened: leaks.Screened | None = None,
    after_answer: bool = False,
) -> dict[str, Any] | None:
    """Log a forwarded call; check its result against the tool's contract when the manifest
    names one, and return that check's report. ``result`` is the copy the plane may keep (its
    secrets redacted: a contract check stores the output); ``screened`` what was found in it,
    counted on the call's row, never a value. A blocked result is refused, and not checked:
    the agent never had it. ``after_answer``: the row of a call admitted in one round trip, with
    no report to give, is completed by the process's writer (gateway/outcomes.py)."""
    contract = attempt.grant.contract if attempt.grant else ""
    blocked = screened is not None and screened.blocked
    refusal = ""
    if result is None:
        outcome: str = Outcome.UPSTREAM_FAILED
    elif blocked:
        outcome, refusal = Outcome.REFUSED, leaks.BLOCKED
    elif result.is_error:
        outcome = Outcome.TOOL_ERROR
    else:
        outcome = Outcome.OK
    found = _secrets_found(attempt, screened) if screened is not None and screened.found else {}
    completion = outcomes.Completion(
        attempt.gateway_call_id or 0, outcome, latency_ms, error_class, refusal, sum(found.values()), list(found)
    )
    if result is None or not contract or result.is_error or blocked:
        if attempt.gateway_call_id is None:
            _log(attempt, outcome, **completion.fields())
        else:
            if after_answer:
                outcomes.WRITER.put(completion)
            else:
                outcomes.complete([completion])
        return None
    with transaction.atomic(durable=True):  # the check and the row that names it, together
        submission = contracts.Submission(
            contracts.current(contract),
            _output(result),
            session_id=attempt.session.pk if attempt.session else None,
            job_id=attempt.job.pk if attempt.job else None,
        )
        (check,) = contracts.check([submission], principal=attempt.principal, source=ContractCheck.Source.TOOL)
        _log(attempt, outcome, contract_check=check, **completion.fields())
    return contracts.report(check)


def _secrets_found(attempt: Attempt, screened: leaks.Screened) -> dict[str, int]:
    """Log and count (per kind and what was done) the secrets a result held; never their values."""
    logger.warning(
        "[gateway] the result of %s for %s held %d secret(s) (%s): %s",
        attempt.tool_id,
        attempt.principal.label,
        screened.count,
        ", ".join(screened.kinds),
        {"redact": "redacted", "block": "blocked", "log": "passed unchanged"}.get(screened.mode, screened.mode),
    )
    for kind, count in screened.found.items():
        metrics.count_on_commit(metrics.RESULT_SECRETS, kind, screened.mode, amount=count)
    if screened.blocked:
        metrics.count_on_commit(metrics.TOOL_REFUSALS, leaks.BLOCKED)
    return screened.found


def _calls_with_arguments(cutoff: datetime) -> QuerySet[GatewayCall]:
    return GatewayCall.objects.filter(arguments__isnull=False, called_at__lt=cutoff)


# Archived, never pruned: a gateway call is the audit of what an agent did through the gateway
# (who, which tool, the arguments' hash, the outcome, the latency); only the arguments go.
ARGUMENTS_RETENTION = retention.Policy(
    name="gateway call arguments",
    action=retention.ARCHIVE,
    candidates=_calls_with_arguments,
    archived={"arguments": None},
)
