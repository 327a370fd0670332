"""Whether each upstream answers, told by listing its tools (what the gateway itself asks of it).

Servers are asked at the same time and each for at most ``PROBE_TIMEOUT`` seconds, so a page that
shows them waits for the slowest one, never for their sum, and an unreachable upstream is one
row saying so, not a broken page. Disabled servers are not asked: the gateway does not use them.
The upstream client keeps lists for a minute and does not ask a failed upstream again for a few
seconds, so reloading the page does not hammer anyone; a stdio server is asked the way an agent's
``tools/list`` asks it (its command runs in the web process's session pool).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field

from asgiref.sync import async_to_sync

from gateway import upstream
from gateway.models import UpstreamServer

PROBE_TIMEOUT = 3.0


@dataclass(frozen=True)
class ToolInfo:
    name: str
    read_only: bool | None  # None: the upstream does not say
    destructive: bool | None


@dataclass(frozen=True)
class Health:
    state: str  # "reachable", "unreachable" or "not_asked" (disabled)
    tools: list[ToolInfo] = field(default_factory=list)
    error: str = ""  # the failure's class: what an operator can look up, never its text

    @property
    def reachable(self) -> bool:
        return self.state == "reachable"


NOT_ASKED = Health("not_asked")


def _failure(exc: BaseException) -> str:
    return type(upstream.root_cause(exc)).__name__


async def _probe(server: UpstreamServer) -> Health:
    try:
        async with asyncio.timeout(PROBE_TIMEOUT):
            listed = await upstream.tools_of(server)
    except Exception as exc:  # any failure of an upstream is this row's news, not the page's
        return Health("unreachable", error=_failure(exc))
    tools = []
    for tool in sorted(listed, key=lambda tool: tool.name):
        hints = tool.annotations
        tools.append(
            ToolInfo(tool.name, hints.read_only_hint if hints else None, hints.destructive_hint if hints else None)
        )
    return Health("reachable", tools)


async def _probe_all(servers: list[UpstreamServer]) -> list[Health]:
    return list(await asyncio.gather(*(_probe(server) for server in servers)))


def probe(servers: Iterable[UpstreamServer]) -> dict[int, Health]:
    """The health of each server, by id; a disabled one is ``NOT_ASKED``."""
    found = list(servers)
    enabled = [server for server in found if server.enabled]
    asked = dict(zip([s.pk for s in enabled], async_to_sync(_probe_all)(enabled), strict=True)) if enabled else {}
    return {server.pk: asked.get(server.pk, NOT_ASKED) for server in found}
