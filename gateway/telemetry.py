"""MCP telemetry in OpenTelemetry's vocabulary for MCP (the GenAI semantic conventions, gen-ai/mcp.md).

Server side, the SDK does most of it: its ``OpenTelemetryMiddleware`` (first in ``Server.middleware``
by default) opens a SERVER span per request named ``{mcp.method.name} {target}`` (the tool's or the
prompt's name), parented on the ``traceparent`` of ``params._meta``, with ``mcp.method.name``,
``mcp.protocol.version``, ``jsonrpc.request.id``, ``gen_ai.operation.name``, ``gen_ai.tool.name``,
``gen_ai.prompt.name`` and ``error.type``. :class:`ServerTelemetry`, placed inside it, adds what it
lacks: ``mcp.resource.uri``, the network attributes, the agent and the refusal of a refused call,
the link to the job's trace, and the ``mcp.server.operation.duration`` metric.

Client side, the SDK's dispatcher span (``MCP send …``) carries our context into the upstream's
``params._meta``, but its name is not the conventions' and it knows nothing of the peer; so
:func:`client_request` wraps each request to an upstream in a CLIENT span of the conventions' name
and attributes, and records ``mcp.client.operation.duration``. The SDK's span is its child.

A job's ``traceId`` is the agent's (governance/kernel/tracing.py): nothing stores the W3C context of
the request that submitted it. So a governed call that names its job (``_meta.jobId``) keeps the
agent's ``traceparent`` as its parent, as the conventions ask, and carries a span *link* to the
trace whose id is the job's ``traceId``, with ``job.id`` and ``job.trace_id``: an agent that uses
its W3C trace id as the job's traceId finds its tool calls in the job's trace.

Arguments, results and keys are never recorded: the arguments are the agent's data, and a tool
name unknown to the caller stays out of the metric (its label values would be the caller's to
choose). Without a tracer or meter provider (tracing off) every call here is a no-op of the API.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

import mcp_types as types
from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError as InvalidValue
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared._otel import extract_trace_context, otel_span  # the SDK's own, as its span is made
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INVALID_PARAMS
from opentelemetry import metrics, trace
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GEN_AI_OPERATION_NAME,
    GEN_AI_PROMPT_NAME,
    GEN_AI_TOOL_NAME,
    GenAiOperationNameValues,
)
from opentelemetry.semconv._incubating.attributes.mcp_attributes import (
    MCP_METHOD_NAME,
    MCP_PROTOCOL_VERSION,
    MCP_RESOURCE_URI,
)
from opentelemetry.semconv._incubating.metrics.mcp_metrics import (
    MCP_CLIENT_OPERATION_DURATION,
    MCP_SERVER_OPERATION_DURATION,
)
from opentelemetry.semconv.attributes.error_attributes import ERROR_TYPE
from opentelemetry.semconv.attributes.network_attributes import NETWORK_PROTOCOL_NAME, NETWORK_TRANSPORT
from opentelemetry.semconv.attributes.server_attributes import SERVER_ADDRESS, SERVER_PORT
from opentelemetry.trace import Link, SpanContext, SpanKind, StatusCode, TraceFlags
from pydantic import BaseModel, ValidationError

from agents.models import Job
from gateway import context, forwarding
from gateway.models import UpstreamServer
from governance.kernel.tracing import SPAN_ATTRIBUTES

if TYPE_CHECKING:
    from mcp.client.session import ClientSession

    from governance.kernel.principals import Principal

T = TypeVar("T")

# The buckets the conventions advise for both operation durations (seconds).
DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
EXECUTE_TOOL = GenAiOperationNameValues.EXECUTE_TOOL.value
TOOL_ERROR = "tool_error"  # the conventions' error.type of a CallToolResult with isError
REFUSAL = "gateway.refusal"  # why the gateway refused a call (NotGranted, PendingApproval...)
RESOURCE_METHODS = frozenset({"resources/read", "resources/subscribe", "resources/unsubscribe"})
# /mcp is served over HTTP (Streamable HTTP), on TCP.
NETWORK = {NETWORK_TRANSPORT: "tcp", NETWORK_PROTOCOL_NAME: "http"}

_tracer = trace.get_tracer(__name__)
_meter = metrics.get_meter(__name__)
SERVER_DURATION = _meter.create_histogram(
    MCP_SERVER_OPERATION_DURATION,
    unit="s",
    description="MCP request duration as observed on the receiver, from its receipt until its answer.",
    explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
)
CLIENT_DURATION = _meter.create_histogram(
    MCP_CLIENT_OPERATION_DURATION,
    unit="s",
    description="MCP request duration as observed on the sender, from its sending until its answer.",
    explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
)


def error_type(exc: BaseException) -> str:
    """``error.type`` of a request that failed, as the SDK's middleware names it: the JSON-RPC
    error code, or the exception's class."""
    if isinstance(exc, MCPError):
        return str(exc.error.code)
    if isinstance(exc, ValidationError):
        return str(INVALID_PARAMS)
    return type(exc).__qualname__


def _refusal(result: HandlerResult) -> str | None:
    """The refusal a tool error of ours names (gateway/server.py ``_error``), if any. The handler's
    result reaches the middleware as the wire's dict."""
    if not _failed_tool(result):
        return None
    wire = result.model_dump(by_alias=True) if isinstance(result, BaseModel) else result
    blocks = wire.get("content") if isinstance(wire, Mapping) else None
    first = blocks[0] if isinstance(blocks, list) and blocks else None
    try:
        body = json.loads(first["text"]) if isinstance(first, Mapping) and isinstance(first.get("text"), str) else None
    except ValueError:
        return None
    refusal = body.get("refusal") if isinstance(body, dict) else None
    # An upstream's own tool error may say anything: only a name of a refusal's shape is kept.
    return refusal if isinstance(refusal, str) and refusal.isidentifier() and len(refusal) <= 40 else None


def _failed_tool(result: Any) -> bool:
    return (isinstance(result, types.CallToolResult) and result.is_error) or (
        isinstance(result, Mapping) and result.get("isError") is True
    )


def _job_trace(principal: Principal, job_id: object) -> tuple[str, uuid.UUID] | None:
    """(the job's id, its traceId) when ``job_id`` names one of the caller's jobs."""
    if principal.agent is None:
        return None
    try:
        found = Job.objects.filter(pk=str(job_id), agent=principal.agent).values_list("pk", "trace_id").first()
    except (InvalidValue, ValueError):
        return None
    return (str(found[0]), found[1]) if found is not None else None


def _job_link(job_id: str, trace_id: uuid.UUID) -> Link:
    """A link to the job's trace. The job stores no span id, so the link names one derived from
    the job's id: any span id would do, the trace id is what a backend finds the trace by."""
    span_id = int.from_bytes(uuid.UUID(job_id).bytes[:8], "big") or 1
    context = SpanContext(trace_id.int, span_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    return Link(context, {SPAN_ATTRIBUTES["job_id"]: job_id, SPAN_ATTRIBUTES["job_trace_id"]: str(trace_id)})


class ServerTelemetry:
    """Context-tier middleware inside the SDK's span: what the SDK's span lacks, and the
    ``mcp.server.operation.duration`` of every request (notifications included)."""

    def __init__(self, principal: ContextVar[Principal]) -> None:
        self._principal = principal

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        started = time.perf_counter()
        span = trace.get_current_span()
        params = ctx.params or {}
        name = params.get("name") if isinstance(params.get("name"), str) else None
        principal = self._principal.get(None)
        _describe(span, principal, ctx.method, params)
        failure: str | None = None
        result: HandlerResult = None
        try:
            result = await call_next(ctx)
        except Exception as exc:
            failure = error_type(exc)
            raise
        finally:
            _conclude(span, ctx.method, ctx.protocol_version, name, result, failure, started)
        job_id = (ctx.meta or {}).get("jobId")
        if principal is not None and _joins_job(span, principal, name, job_id):
            await sync_to_async(join_job)(span, principal, job_id)
        return result


def served_call(
    principal: Principal,
    name: str,
    protocol_version: str,
    request_id: str | int,
    meta: Mapping[str, Any],
    run: Callable[[], types.CallToolResult],
) -> types.CallToolResult:
    """``run()``, a governed ``tools/call`` the express lane answers (gateway/express.py), with the
    telemetry the SDK's path gives it: the SDK's own SERVER span (its name, attributes, parent
    and tool-error status), what :class:`ServerTelemetry` adds inside it, and the duration."""
    attributes = {
        MCP_METHOD_NAME: "tools/call",
        MCP_PROTOCOL_VERSION: protocol_version,
        "jsonrpc.request.id": str(request_id),
        GEN_AI_OPERATION_NAME: EXECUTE_TOOL,
        GEN_AI_TOOL_NAME: name,
    }
    with otel_span(
        f"tools/call {name}",
        kind=SpanKind.SERVER,
        attributes=attributes,
        context=extract_trace_context(meta),
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        started = time.perf_counter()
        _describe(span, principal, "tools/call", {"name": name})
        result: types.CallToolResult | None = None
        failure: str | None = None
        try:
            result = run()
        except Exception as exc:
            failure = error_type(exc)
            span.set_attribute(ERROR_TYPE, type(exc).__qualname__)
            span.record_exception(exc)
            span.set_status(StatusCode.ERROR, str(exc))
            raise
        finally:
            _conclude(span, "tools/call", protocol_version, name, result, failure, started)
        if result.is_error:
            span.set_attribute(ERROR_TYPE, TOOL_ERROR)
            span.set_status(StatusCode.ERROR)
        if _joins_job(span, principal, name, meta.get("jobId")):
            join_job(span, principal, meta["jobId"])
        return result


def _describe(span: trace.Span, principal: Principal | None, method: str, params: Mapping[str, Any]) -> None:
    """What the SDK's span lacks: the network, a resource's URI, the agent."""
    span.set_attributes(NETWORK)
    if method in RESOURCE_METHODS and isinstance(params.get("uri"), str):
        span.set_attribute(MCP_RESOURCE_URI, params["uri"])
    if principal is not None and principal.agent is not None:
        span.set_attribute(SPAN_ATTRIBUTES["agent_id"], principal.agent.agent_id)


def _conclude(
    span: trace.Span,
    method: str,
    protocol_version: str | None,
    name: str | None,
    result: Any,
    failure: str | None,
    started: float,
) -> None:
    """The refusal on the span, and the request's duration with its method, tool and error."""
    refusal = _refusal(result)
    if refusal is not None:
        span.set_attribute(REFUSAL, refusal)
    if failure is None and method == "tools/call" and _failed_tool(result):
        failure = TOOL_ERROR
    # The tool is one of ours when the handler said so: neither refused as unknown nor
    # stopped before it (a protocol error leaves the name unchecked).
    known = refusal != "NotGranted" and failure in (None, TOOL_ERROR)
    SERVER_DURATION.record(
        time.perf_counter() - started, _server_metric(method, protocol_version, name, failure, known=known)
    )


def _joins_job(span: trace.Span, principal: Principal | None, name: str | None, job_id: object) -> bool:
    governed = name is not None and forwarding.split(name) is not None
    return governed and job_id is not None and principal is not None and span.is_recording()


def join_job(span: trace.Span, principal: Principal, job_id: object) -> None:
    """The span joins the trace of the caller's job it names (a link and the job's attributes)."""
    job = _job_trace(principal, job_id)
    if job is None:  # not the caller's job: the call was refused, and no trace is joined
        return
    key, trace_id = job
    span.set_attributes({SPAN_ATTRIBUTES["job_id"]: key, SPAN_ATTRIBUTES["job_trace_id"]: str(trace_id)})
    if span.get_span_context().trace_id != trace_id.int:  # the agent's trace is not already the job's
        link = _job_link(key, trace_id)
        span.add_link(link.context, link.attributes)


def _server_metric(
    method: str, protocol_version: str | None, name: str | None, failure: str | None, *, known: bool
) -> dict[str, Any]:
    """The metric's attributes: the method, the tool or prompt (when it is one of ours), the error."""
    attributes: dict[str, Any] = {MCP_METHOD_NAME: method, MCP_PROTOCOL_VERSION: protocol_version, **NETWORK}
    if method == "tools/call":
        attributes[GEN_AI_OPERATION_NAME] = EXECUTE_TOOL
        if name is not None and known:  # a name nobody granted: its values would be the caller's to choose
            attributes[GEN_AI_TOOL_NAME] = name
    elif method == "prompts/get" and name in context.PROMPTS:
        attributes[GEN_AI_PROMPT_NAME] = name
    if failure is not None:
        attributes[ERROR_TYPE] = failure
    return attributes


def peer(transport: str, url: str) -> dict[str, Any]:
    """The network attributes of an upstream: its host and port over HTTP, a pipe over stdio."""
    if transport == UpstreamServer.Transport.STDIO:
        return {NETWORK_TRANSPORT: "pipe"}
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return {**NETWORK, SERVER_ADDRESS: parts.hostname or "", SERVER_PORT: port}


@dataclass
class Observed:
    """What a request in a :func:`client_span` answered, set by the code inside it."""

    result: Any = None


@contextmanager
def client_span(
    method: str, peer_attributes: dict[str, Any], protocol_version: str | None, *, tool: str | None = None
) -> Iterator[Observed]:
    """One request to an upstream, made inside: a CLIENT span named ``{method} {tool}``, and its
    duration recorded as ``mcp.client.operation.duration``, with the error it failed with (a
    raised exception's, or a tool error of the result the body sets on the ``Observed``)."""
    attributes: dict[str, Any] = {MCP_METHOD_NAME: method, **peer_attributes}
    if protocol_version:
        attributes[MCP_PROTOCOL_VERSION] = protocol_version
    if tool is not None:
        attributes.update({GEN_AI_TOOL_NAME: tool, GEN_AI_OPERATION_NAME: EXECUTE_TOOL})
    started = time.perf_counter()
    failure: str | None = None
    observed = Observed()
    with _tracer.start_as_current_span(
        f"{method} {tool}" if tool else method,
        kind=SpanKind.CLIENT,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield observed
            if _failed_tool(observed.result):
                failure = TOOL_ERROR
        except Exception as exc:
            failure = error_type(exc)
            raise
        finally:
            if failure is not None:
                # No description: an upstream's message may quote the arguments.
                span.set_attribute(ERROR_TYPE, failure)
                span.set_status(StatusCode.ERROR)
                attributes[ERROR_TYPE] = failure
            CLIENT_DURATION.record(time.perf_counter() - started, attributes)


async def client_request(
    method: str,
    session: ClientSession,
    peer_attributes: dict[str, Any],
    send: Callable[[], Awaitable[T]],
    *,
    tool: str | None = None,
) -> T:
    """``send()``, one request to an upstream on the SDK's session, in a :func:`client_span`."""
    with client_span(method, peer_attributes, session.protocol_version, tool=tool) as observed:
        observed.result = await send()
        return observed.result
