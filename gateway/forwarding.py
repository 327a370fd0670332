"""The governed path to upstream tools: which ones an agent's manifest grants, and the checks a
call passes before it is forwarded (``agents.tools.record_call``: permission, the rate limit shared
by every process, a reviewer's approval bound to the arguments' hash).

A manifest names an upstream tool ``mcp__<server>__<tool>``; the server is an enabled
:class:`UpstreamServer` of that name. Everything here is synchronous (database); the server runs
it with ``sync_to_async``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from agents import tools as agent_tools
from agents.models import ManifestTool, ToolCall
from gateway.models import UpstreamServer
from governance.kernel.exceptions import Forbidden
from governance.kernel.principals import Principal
from governance.kernel.services import record

PREFIX = "mcp__"


@dataclass(frozen=True)
class Grant:
    tool_id: str  # mcp__<server>__<tool>, as the manifest names it
    server: UpstreamServer
    tool: str  # the upstream's own name
    permission: str


def split(tool_id: str) -> tuple[str, str] | None:
    """(server, tool) of ``mcp__<server>__<tool>``; None for any other name."""
    if not tool_id.startswith(PREFIX):
        return None
    server, sep, tool = tool_id[len(PREFIX) :].partition("__")
    return (server, tool) if sep and server and tool else None


def grants(principal: Principal) -> list[Grant]:
    """The upstream tools the caller's active manifest grants on enabled servers."""
    agent = principal.agent
    if agent is None or agent.active_manifest_id is None:
        return []
    rows = ManifestTool.objects.filter(manifest_id=agent.active_manifest_id, tool_id__startswith=PREFIX)
    named = {row.tool_id: (split(row.tool_id), row.permission) for row in rows}
    servers = UpstreamServer.objects.in_bulk(
        [parts[0] for parts, _ in named.values() if parts is not None], field_name="name"
    )
    return [
        Grant(tool_id, servers[parts[0]], parts[1], permission)
        for tool_id, (parts, permission) in sorted(named.items())
        if parts is not None and parts[0] in servers and servers[parts[0]].enabled
    ]


def authorize(principal: Principal, grant: Grant, arguments: dict[str, Any], *, destructive: bool) -> Any:
    """Record the call (or the approval it waits for) before anything is forwarded."""
    if destructive and grant.permission == "read":
        raise Forbidden(
            f"{grant.tool_id} is granted read, and the upstream marks it destructive.", tool_id=grant.tool_id
        )
    assert principal.agent is not None
    return agent_tools.record_call(principal.agent, grant.tool_id, actor=principal, arguments=arguments)


def forwarded(principal: Principal, call_id: int, *, started: float, outcome: str, error_class: str = "") -> None:
    """The audit row of a forwarded call: latency, outcome and, on failure, the error's class."""
    latency_ms = round((time.perf_counter() - started) * 1000, 1)
    target = ToolCall(pk=call_id)  # the row record_call wrote: the audit row needs only its key
    record(
        actor=principal,
        action="mcp.forwarded",
        target=target,
        latency_ms=latency_ms,
        outcome=outcome,
        error=error_class,
    )
