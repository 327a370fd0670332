"""A governed upstream call from the agent's request to its answer, in the request's own thread.

Every check, the forward and the log are synchronous and run one after the other where the
request is served: the express lane of ``/mcp`` (gateway/express.py) calls ``answer`` directly,
the SDK's handlers (gateway/server.py, gateway/task_protocol.py) once through ``sync_to_async``.
No step hops to another thread but the upstream's own request, which the process's session pool
runs on its event loop (gateway/upstream.py) or a worker runs for a stdio upstream.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import mcp_types as types

from agents import amendments
from gateway import forwarding, leaks, reach, upstream
from gateway.models import UpstreamServer
from governance.kernel.principals import Principal

logger = logging.getLogger(__name__)

# Never the exception's text: it may name tables, values or hosts an agent must not see.
FAILED = "The call failed on the server; it was logged."


def tool_error(message: str, **data: Any) -> types.CallToolResult:
    """A refusal the agent reads and can act on: a tool error, not a protocol error."""
    body = json.dumps({"error": message, **data}, default=str)
    return types.CallToolResult(content=[types.TextContent(type="text", text=body)], is_error=True)


def unlisted(server: UpstreamServer, exc: BaseException) -> None:
    """An upstream that did not list its tools: its tools are left out, and the log says why."""
    logger.warning("[mcp] upstream %s did not list its tools: %s", server.name, upstream.failure_class(exc))


def call(
    principal: Principal, name: str, arguments: dict[str, Any], meta: dict[str, Any], *, after_answer: bool = False
) -> types.CallToolResult:
    """The governed call; ``forwarding.Refused`` (already logged) when it may not be forwarded,
    which the caller answers: at once, or as an MCP task (gateway/task_protocol.py).
    ``after_answer``: its outcome may be written after the answer (``forwarding.finish``)."""
    prepared = forwarding.admit(principal, name, arguments, meta, upstream.POOL.kept) or forwarding.prepare(
        principal, name, arguments, meta, reach.cached_tools
    )
    if isinstance(prepared, forwarding.NeedsList):  # the first call in a while: ask the upstream
        try:
            reach.tools_now(prepared.server)
        except Exception as exc:
            unlisted(prepared.server, exc)
        prepared = forwarding.prepare(principal, name, arguments, meta, lambda server: reach.cached_tools(server) or [])
    assert isinstance(prepared, forwarding.Attempt)
    if prepared.dry_run:
        # Not a result: the upstream's output schema cannot be honoured by a call not made.
        return tool_error(
            f"The job is a dryRun: {name} was recorded, not forwarded.",
            refusal="DryRun",
            dryRun=True,
            toolCallId=prepared.tool_call_id,
        )
    result = _made(prepared, name, after_answer)
    return _told_of_edit(result, prepared.edited) if prepared.edited is not None else result


def answer(
    principal: Principal, name: str, arguments: dict[str, Any], meta: dict[str, Any], *, after_answer: bool = False
) -> types.CallToolResult:
    """``call``, a refusal answered as the tool error the agent reads."""
    try:
        return call(principal, name, arguments, meta, after_answer=after_answer)
    except forwarding.Refused as refused:
        return tool_error(refused.message, refusal=refused.refusal, **refused.extra)


def _made(attempt: forwarding.Attempt, name: str, after_answer: bool) -> types.CallToolResult:
    """The call forwarded with the attempt's arguments (a reviewer's edited ones when they
    approved those), logged, its result screened for secrets and checked against its contract."""
    grant = attempt.grant
    assert grant is not None
    started = time.perf_counter()
    try:
        result = reach.call(grant.server, grant.tool, attempt.arguments)
    except Exception as exc:
        latency_ms = round((time.perf_counter() - started) * 1000, 2)
        error_class = upstream.failure_class(exc)
        forwarding.finish(attempt, latency_ms=latency_ms, error_class=error_class, after_answer=after_answer)
        return tool_error(f"The upstream server failed ({error_class}).", refusal="UpstreamFailed")
    latency_ms = round((time.perf_counter() - started) * 1000, 2)
    # Secrets in the result are found before the agent sees it; the plane keeps only the redacted copy.
    screened = leaks.check(result, grant.server.result_secrets, attempt.secret_names)
    report = forwarding.finish(
        attempt, latency_ms=latency_ms, result=screened.stored, screened=screened, after_answer=after_answer
    )
    if screened.result is None:
        return tool_error(
            f"The result of {name} held secrets ({', '.join(screened.kinds)}); this server's results are "
            "blocked when they do.",
            refusal=leaks.BLOCKED,
            secrets=screened.kinds,
        )
    result = screened.result
    if report is not None:
        # The agent learns at once whether its tool's result honours the declared contract.
        result.meta = {**(result.meta or {}), "contract": report}
    return result


def _told_of_edit(result: types.CallToolResult, edited: dict[str, Any]) -> types.CallToolResult:
    """The result of a call a reviewer approved with edited arguments says so: in a text block the
    agent's model reads (what changed, the arguments the call was made with) and, whole, in the
    result's ``_meta`` as ``argumentsEdited`` (agents/tools.py ``_edit_of``)."""
    note = (
        f"A reviewer ({edited['editedBy']}) changed the arguments before approving this call: "
        f"{amendments.describe(edited['changes'])}. It was made with {json.dumps(edited['arguments'])}."
    )
    return result.model_copy(
        update={
            "content": [*result.content, types.TextContent(type="text", text=note)],
            "meta": {**(result.meta or {}), "argumentsEdited": edited},
        }
    )
