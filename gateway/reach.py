"""How a web process reaches an upstream: a Streamable HTTP one directly, through its session pool
and the outbound guard (gateway/upstream.py), or with plain POSTs when it keeps no session
(gateway/plain.py); a stdio one through a worker (gateway/stdio.py), never by starting its command."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from asgiref.sync import sync_to_async

from gateway import plain, stdio, upstream
from gateway.models import UpstreamServer


def _stdio(server: UpstreamServer) -> bool:
    return server.transport == UpstreamServer.Transport.STDIO


async def tools_of(server: UpstreamServer) -> list[types.Tool]:
    """The upstream's tools; a stdio server never listed by a worker is waited for a few seconds."""
    if _stdio(server):
        return await sync_to_async(stdio.tools)(server, wait=stdio.LIST_WAIT)
    return await upstream.POOL.tools_of(server)


def cached_tools(server: UpstreamServer) -> list[types.Tool] | None:
    """The upstream's tools if they are at hand without asking it (synchronous: the database)."""
    if _stdio(server):
        try:
            return stdio.tools(server, wait=0)
        except (stdio.NotListed, upstream.RemoteFailure):
            return None
    return upstream.POOL.cached_tools(server)


def tools_now(server: UpstreamServer) -> list[types.Tool]:
    """``tools_of`` for a synchronous caller (the governed call runs in the request's thread)."""
    if _stdio(server):
        return stdio.tools(server, wait=stdio.LIST_WAIT)
    return upstream.POOL.tools_now(server)


def call(server: UpstreamServer, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
    """One call of ``tool``, waited for in the caller's thread: a worker runs a stdio one; a
    stateless HTTP one is one POST (gateway/plain.py), any other goes on the SDK's session."""
    if _stdio(server):
        return stdio.call(server, tool, arguments)
    listed = next((t for t in upstream.POOL.cached_tools(server) or [] if t.name == tool), None)
    if listed is not None:  # its output schema is at hand, to check the result against
        result = plain.call(upstream.Address.of(server), tool, arguments, listed, upstream.CALL_TIMEOUT)
        if result is not None:
            return result
    return upstream.POOL.call_now(server, tool, arguments)
