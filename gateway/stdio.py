"""stdio upstreams, run by the Celery workers for the web processes.

A stdio upstream is a program the deployment allows (GATEWAY_STDIO_COMMANDS). A web process never
starts it: it once took no more than a Viewer opening /gateway/ for every web process to run
whatever an Admin had typed, as the server's user. A web process asks a worker instead, and
waits, with a bound, for the answer in the database:

* tools: what a worker last listed (``ToolListing``) is read at once. When it is older than
  ``upstream.LIST_TTL`` (or ``RETRY_AFTER_FAILURE`` after a failure) a worker is asked to list
  again, once per ``ASK_AGAIN`` seconds whoever asks; only a server never listed makes a caller
  wait, and ``wait`` seconds at most.
* calls: each ``tools/call`` is a ``StdioCall`` row. A worker claims it (so a call runs once, even
  when its message is delivered again), runs it and writes the answer; the web process reads it
  and deletes the row. A call no worker took within ``PICKUP_WAIT`` is withdrawn and never runs
  late; a call taken is waited for as long as opening a session and a call may take.

The workers' side (``list_tools``, ``answer``) runs the commands in their own session pool
(``upstream.WORKER_POOL``): one process per upstream and worker process, kept between calls.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal, TypeVar

import mcp_types as types
from django.db.models import Q
from django.utils import timezone

from gateway import upstream
from gateway.models import StdioCall, ToolListing, UpstreamServer
from governance.kernel import dispatch

logger = logging.getLogger(__name__)

LIST_TASK = "gateway.list_stdio_tools"
CALL_TASK = "gateway.call_stdio_tool"
ASK_AGAIN = 10.0  # seconds between two asks for a new listing of one server
LIST_WAIT = 5.0  # an agent's tools/list waits this long for a server's first listing
PICKUP_WAIT = 10.0  # a call no worker took by then is withdrawn
CALL_WAIT = upstream.OPEN_TIMEOUT + upstream.CALL_TIMEOUT + 10.0  # a call taken, until the worker answers
LEFTOVER_AGE = timedelta(hours=1)  # rows of web processes that died waiting
_FIRST_POLL, _LONGEST_POLL = 0.02, 0.25

T = TypeVar("T")


class NotListed(Exception):
    """No worker has listed the server's tools yet (none runs, or all are busy)."""


class WorkerUnavailable(Exception):
    """No worker took the call in time: it was withdrawn, and never runs."""


@dataclass(frozen=True)
class Listing:
    """What a web process knows of a stdio server's tools: ``listed``, ``failed`` (``error`` is
    the failure's class) or ``waiting`` (a worker was asked, none answered yet)."""

    state: str
    tools: list[types.Tool] = field(default_factory=list)
    error: str = ""
    answered_at: datetime | None = None


WAITING = Listing("waiting")


def _of(server: UpstreamServer, listing: ToolListing | None) -> Listing:
    """The listing a worker made of the server's current command, or ``WAITING``."""
    if listing is None or listing.answered_at is None or listing.command != server.command:
        return WAITING
    if listing.error:
        return Listing("failed", error=listing.error, answered_at=listing.answered_at)
    return Listing("listed", [types.Tool.model_validate(tool) for tool in listing.tools], "", listing.answered_at)


def _ask(server: UpstreamServer) -> None:
    """Ask a worker to list the server's tools, unless someone asked a moment ago."""
    now = timezone.now()
    ToolListing.objects.get_or_create(server=server, defaults={"command": server.command})
    recently = now - timedelta(seconds=ASK_AGAIN)
    due = ToolListing.objects.filter(Q(requested_at__isnull=True) | Q(requested_at__lt=recently), server=server)
    if due.update(requested_at=now):
        dispatch.send(LIST_TASK, server.pk)


def known(server: UpstreamServer, listing: ToolListing | None) -> Listing:
    """What is known of the server's tools (``listing``: its row, read by the caller), asking a
    worker to list them again when that is old. Never waits."""
    found = _of(server, listing)
    age = (timezone.now() - found.answered_at).total_seconds() if found.answered_at else None
    if age is None or age >= (upstream.RETRY_AFTER_FAILURE if found.error else upstream.LIST_TTL):
        _ask(server)
    return found


def _poll(read: Callable[[], T | None], seconds: float) -> T | None:
    """``read()`` again and again, less often as time passes, until it gives something or
    ``seconds`` have passed."""
    deadline = time.monotonic() + seconds
    pause = _FIRST_POLL
    while True:
        found = read()
        left = deadline - time.monotonic()
        if found is not None or left <= 0:
            return found
        time.sleep(min(pause, left))
        pause = min(pause * 2, _LONGEST_POLL)


def tools(server: UpstreamServer, *, wait: float) -> list[types.Tool]:
    """The server's tools as a worker last listed them, waiting ``wait`` seconds at most for a
    first listing. ``NotListed`` when there is none yet; ``upstream.RemoteFailure`` when the last
    listing failed."""
    found = known(server, ToolListing.objects.filter(server=server).first())
    if found is WAITING and wait > 0:

        def listed() -> Listing | None:
            fresh = _of(server, ToolListing.objects.filter(server=server).first())
            return None if fresh is WAITING else fresh

        found = _poll(listed, wait) or WAITING
    if found is WAITING:
        raise NotListed(server.name)
    if found.error:
        raise upstream.RemoteFailure(found.error)
    return found.tools


def _reached(call_id: Any, stage: Literal["started_at", "answered_at"]) -> Mapping[str, Any] | None:
    """The call's progress once its ``stage`` (``started_at``, ``answered_at``) is set, else None."""
    progress = StdioCall.objects.filter(pk=call_id).values("started_at", "answered_at", "result", "error").first()
    return progress if progress is not None and progress[stage] is not None else None


def call(server: UpstreamServer, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
    """``tool`` of the server, run by a worker, its answer waited for. ``WorkerUnavailable`` when
    no worker took it in time (it never runs), ``TimeoutError`` when the one that took it did not
    answer in time, ``upstream.RemoteFailure`` when the upstream failed there."""
    row = StdioCall.objects.create(server=server, tool=tool, arguments=arguments)
    try:
        if not dispatch.send(CALL_TASK, str(row.pk)):
            raise WorkerUnavailable("the broker cannot be reached")
        taken = _poll(lambda: _reached(row.pk, "started_at"), PICKUP_WAIT)
        if taken is None and StdioCall.objects.filter(pk=row.pk, started_at__isnull=True).delete()[0]:
            raise WorkerUnavailable(f"no worker took the call within {PICKUP_WAIT:.0f} s")
        answered = _poll(lambda: _reached(row.pk, "answered_at"), CALL_WAIT)
        if answered is None:
            raise TimeoutError(f"the worker did not answer within {CALL_WAIT:.0f} s")
        if answered["error"]:
            raise upstream.RemoteFailure(answered["error"])
        return types.CallToolResult.model_validate(answered["result"])
    finally:
        StdioCall.objects.filter(pk=row.pk).delete()


# --- The workers' side ---------------------------------------------------------------------------


def _dump(model: Any) -> dict[str, Any]:
    """A protocol object as MCP sends it on the wire."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def list_tools(server_id: int) -> str:
    """List an enabled stdio server's tools now and keep what came of it for the web processes."""
    server = UpstreamServer.objects.filter(pk=server_id, transport=UpstreamServer.Transport.STDIO, enabled=True).first()
    if server is None:
        return "gone"
    try:
        fields: dict[str, Any] = {"tools": [_dump(tool) for tool in upstream.WORKER_POOL.list_now(server)], "error": ""}
    except Exception as exc:  # any failure of the upstream is the listing's news
        fields = {"tools": [], "error": upstream.failure_class(exc)}
        logger.warning("[gateway] stdio upstream %s did not list its tools: %s", server.name, fields["error"])
    answered = {"command": server.command, "answered_at": timezone.now(), **fields}
    ToolListing.objects.update_or_create(server=server, defaults=answered)
    return fields["error"] or "listed"


def answer(call_id: str) -> str:
    """Run a call a web process waits for, once: a row already claimed (its message delivered
    again) or withdrawn is left alone."""
    now = timezone.now()
    StdioCall.objects.filter(created_at__lt=now - LEFTOVER_AGE).delete()
    if not StdioCall.objects.filter(pk=call_id, started_at__isnull=True).update(started_at=now):
        return "gone"
    row = StdioCall.objects.select_related("server").filter(pk=call_id).first()
    if row is None:
        return "gone"
    try:
        if not row.server.enabled or row.server.transport != UpstreamServer.Transport.STDIO:
            raise upstream.RemoteFailure("Disabled")
        fields: dict[str, Any] = {"result": _dump(upstream.WORKER_POOL.call_now(row.server, row.tool, row.arguments))}
    except Exception as exc:  # the web process tells the agent; the call log keeps the class
        fields = {"error": upstream.failure_class(exc)}
    StdioCall.objects.filter(pk=call_id).update(answered_at=timezone.now(), **fields)
    return fields.get("error") or "answered"
