"""Whether each upstream answers, told by listing its tools (what the gateway itself asks of it).

Streamable HTTP servers are asked at the same time and each for at most ``PROBE_TIMEOUT`` seconds,
so a page that shows them waits for the slowest one, never for their sum, and an unreachable
upstream is one row saying so, not a broken page. The upstream client keeps lists for a minute and
does not ask a failed upstream again for a few seconds, so reloading the page does not hammer anyone.

A stdio server is never started by the page (nor by any web process): it shows what a worker last
listed, and an old listing makes a worker list it again for the next look. Disabled servers are not
asked: the gateway does not use them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

import mcp_types as types
from asgiref.sync import async_to_sync

from gateway import forwarding, stdio, upstream
from gateway.models import ToolListing, UpstreamServer

PROBE_TIMEOUT = 3.0


@dataclass(frozen=True)
class ToolInfo:
    name: str
    read_only: bool
    destructive: bool
    said: bool  # False: the upstream says nothing, and MCP's defaults apply (destructive)


@dataclass(frozen=True)
class Health:
    state: str  # "reachable", "unreachable", "waiting" (a worker was asked) or "not_asked" (disabled)
    tools: list[ToolInfo] = field(default_factory=list)
    error: str = ""  # the failure's class: what an operator can look up, never its text
    listed_at: datetime | None = None  # stdio: when a worker listed the tools shown
    listed: list[types.Tool] = field(default_factory=list)  # as the upstream lists them (gateway/pins.py)

    @property
    def reachable(self) -> bool:
        return self.state == "reachable"


NOT_ASKED = Health("not_asked")


def _infos(listed: list[types.Tool]) -> list[ToolInfo]:
    infos = []
    for tool in sorted(listed, key=lambda tool: tool.name):
        read_only, destructive = forwarding.hints(tool.annotations)
        said = tool.annotations is not None and (
            tool.annotations.read_only_hint is not None or tool.annotations.destructive_hint is not None
        )
        infos.append(ToolInfo(tool.name, read_only, destructive, said))
    return infos


async def _probe(server: UpstreamServer) -> Health:
    try:
        async with asyncio.timeout(PROBE_TIMEOUT):
            listed = await upstream.POOL.tools_of(server)
    except Exception as exc:  # any failure of an upstream is this row's news, not the page's
        return Health("unreachable", error=upstream.failure_class(exc))
    return Health("reachable", _infos(listed), listed=listed)


async def _probe_all(servers: list[UpstreamServer]) -> list[Health]:
    return list(await asyncio.gather(*(_probe(server) for server in servers)))


def _stdio_health(server: UpstreamServer, listing: ToolListing | None) -> Health:
    found = stdio.known(server, listing)
    if found.state == "waiting":
        return Health("waiting")
    if found.error:
        return Health("unreachable", error=found.error, listed_at=found.answered_at)
    return Health("reachable", _infos(found.tools), listed_at=found.answered_at, listed=found.tools)


def probe(servers: Iterable[UpstreamServer]) -> dict[int, Health]:
    """The health of each server, by id; a disabled one is ``NOT_ASKED``."""
    found = list(servers)
    enabled = [server for server in found if server.enabled]
    http = [server for server in enabled if server.transport == UpstreamServer.Transport.HTTP]
    asked = dict(zip([s.pk for s in http], async_to_sync(_probe_all)(http), strict=True)) if http else {}
    commands = [server for server in enabled if server.transport == UpstreamServer.Transport.STDIO]
    listings = ToolListing.objects.in_bulk([server.pk for server in commands]) if commands else {}
    asked.update({server.pk: _stdio_health(server, listings.get(server.pk)) for server in commands})
    return {server.pk: asked.get(server.pk, NOT_ASKED) for server in found}
