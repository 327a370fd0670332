"""Calls to upstream MCP servers through one long-lived client session per server and process.

Opening an MCP session costs an ``initialize`` round trip (and, over stdio, starting a process),
several times the cost of a call. So each web process keeps one SDK ``ClientSession`` per
upstream, opened on first use and shared by every request thread: the sessions live on one event
loop, in a daemon thread of the process (started again after a fork), and request handlers hand
their calls to it. The SDK's session multiplexes concurrent requests by id.

The agent's key never goes upstream: the only credential sent is the server's own, read from the
environment variable an operator named: as a bearer token over HTTP, or as that one variable in
a stdio command's environment (which inherits nothing else of the web process's environment:
no database URL, no secret key). Tool lists are kept for ``LIST_TTL`` seconds, so an agent's
``tools/list`` does not ask every upstream every time; an upstream that failed is not asked
again for ``RETRY_AFTER_FAILURE`` seconds.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import threading
import time
from collections.abc import Coroutine
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import httpx2
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import CONNECTION_CLOSED, INVALID_REQUEST

from gateway.models import UpstreamServer
from governance.kernel import secrets

LIST_TTL = 60.0
RETRY_AFTER_FAILURE = 15.0
OPEN_TIMEOUT = 20.0  # initialize, including a stdio command's start
CALL_TIMEOUT = 120.0
HTTP_TIMEOUT = httpx2.Timeout(CALL_TIMEOUT, connect=5.0)
# One TLS context per process: building one costs ~20 ms, more than a call.
_TLS = ssl.create_default_context()

T = TypeVar("T")


def root_cause(exc: BaseException) -> BaseException:
    """The first real failure inside (nested) task-group exception groups: what an operator can
    look up, where the group itself says nothing."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


class Unreachable(Exception):
    """The upstream failed a moment ago; it is asked again after a pause."""


@dataclass(frozen=True)
class Address:
    """What identifies a live session: a change of any of it (an operator edited the server)
    opens a new one."""

    pk: int
    name: str
    transport: str
    url: str
    argv: tuple[str, ...]
    secret_name: str

    @classmethod
    def of(cls, server: UpstreamServer) -> Address:
        argv = tuple(server.argv) if server.transport == UpstreamServer.Transport.STDIO else ()
        return cls(server.pk, server.name, server.transport, server.url, argv, server.secret_name)

    def secret(self) -> str:
        return secrets.value(self.secret_name, prefix=secrets.UPSTREAM_TOKEN_PREFIX)


class _Link:
    """One open session, run by its own task (anyio's task groups must be left by the task that
    entered them); ``close`` ends it."""

    def __init__(self, address: Address) -> None:
        self.address = address
        self.ready: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
        self._closing = asyncio.Event()
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                read, write = await self._transport(stack)
                session = await stack.enter_async_context(ClientSession(read, write, read_timeout_seconds=CALL_TIMEOUT))
                await session.initialize()
                self.ready.set_result(session)
                await self._closing.wait()
        except BaseException as exc:  # the transport's task group may end in any error
            cause = root_cause(exc)
            if not self.ready.done():
                self.ready.set_exception(cause if isinstance(cause, Exception) else ConnectionError(repr(cause)))
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise

    async def _transport(self, stack: AsyncExitStack) -> tuple[Any, Any]:
        address = self.address
        if address.transport == UpstreamServer.Transport.STDIO:
            command, *args = address.argv
            env = {address.secret_name: address.secret()} if address.secret_name else {}
            params = StdioServerParameters(command=command, args=args, env=env)
            read, write = await stack.enter_async_context(stdio_client(params))
            return read, write
        token = address.secret()
        http = await stack.enter_async_context(
            httpx2.AsyncClient(
                headers={"Authorization": f"Bearer {token}"} if token else {}, timeout=HTTP_TIMEOUT, verify=_TLS
            )
        )
        read, write, *_ = await stack.enter_async_context(streamable_http_client(address.url, http_client=http))
        return read, write

    def close(self) -> None:
        self._closing.set()


def _session_lost(exc: BaseException, *, idempotent: bool) -> bool:
    """Whether the request may be sent again on a new session. An HTTP upstream that forgot our
    session (it restarted) answered 404 without running anything: always. A link that closed
    (a stdio command that exited) may have run the request before it went: only a request that
    can safely run twice (a listing)."""
    if isinstance(exc, MCPError):
        if exc.error.code == INVALID_REQUEST and "session" in exc.error.message.lower():
            return True
        return idempotent and exc.error.code == CONNECTION_CLOSED
    return idempotent and isinstance(exc, (ConnectionError, EOFError, anyio.ClosedResourceError))


class Pool:
    """The sessions of one process, on one event loop in a daemon thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = 0
        self._links: dict[int, _Link] = {}
        self._lists: dict[Address, tuple[float, list[types.Tool]]] = {}
        self._failures: dict[Address, float] = {}

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():  # first use, or a forked child
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="mcp-upstreams", daemon=True).start()
                self._loop, self._pid, self._links = loop, os.getpid(), {}
            return self._loop

    async def run(self, work: Coroutine[Any, Any, T]) -> T:
        """Run ``work`` on the pool's loop and wait for it from the caller's loop."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, self._running_loop()))

    async def _session(self, address: Address) -> ClientSession:
        link = self._links.get(address.pk)
        if link is not None and (link.address != address or link.task.done()):
            link.close()
            link = None
        if link is None:
            link = self._links[address.pk] = _Link(address)
        try:
            return await asyncio.wait_for(asyncio.shield(link.ready), OPEN_TIMEOUT)
        except BaseException:
            self._drop(link)
            raise

    def _drop(self, link: _Link) -> None:
        link.close()
        if self._links.get(link.address.pk) is link:
            del self._links[link.address.pk]

    async def _with_session(self, address: Address, request: Any, *, idempotent: bool) -> Any:
        """``request(session)``; on a new session once when the first one turned out dead (see
        ``_session_lost``). A dead link is dropped either way, so the next request opens anew."""
        for attempt in (1, 2):
            session = await self._session(address)
            try:
                return await request(session)
            except Exception as exc:
                link = self._links.get(address.pk)
                if link is not None and (_session_lost(exc, idempotent=True) or link.task.done()):
                    self._drop(link)
                if attempt == 2 or not _session_lost(exc, idempotent=idempotent):
                    raise
        raise AssertionError("unreachable")

    async def _tools(self, address: Address) -> list[types.Tool]:
        now = time.monotonic()
        cached = self._lists.get(address)
        if cached is not None and now - cached[0] < LIST_TTL:
            return cached[1]
        if now - self._failures.get(address, -RETRY_AFTER_FAILURE) < RETRY_AFTER_FAILURE:
            raise Unreachable(address.name)

        async def listing(session: ClientSession) -> list[types.Tool]:
            tools: list[types.Tool] = []
            cursor = None
            while True:
                page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    return tools

        try:
            tools = await self._with_session(address, listing, idempotent=True)
        except Exception:
            self._failures[address] = time.monotonic()
            raise
        self._failures.pop(address, None)
        self._lists[address] = (time.monotonic(), tools)
        return tools

    async def _call(self, address: Address, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        return await self._with_session(address, lambda session: session.call_tool(tool, arguments), idempotent=False)

    async def _close_all(self) -> None:
        links, self._links = list(self._links.values()), {}
        for link in links:
            link.close()
        await asyncio.gather(*(link.task for link in links), return_exceptions=True)
        self._lists.clear()
        self._failures.clear()

    def cached_tools(self, server: UpstreamServer) -> list[types.Tool] | None:
        """The upstream's list if one fresh enough is kept, read from the caller's thread."""
        cached = self._lists.get(Address.of(server))
        return cached[1] if cached is not None and time.monotonic() - cached[0] < LIST_TTL else None

    async def tools_of(self, server: UpstreamServer) -> list[types.Tool]:
        cached = self.cached_tools(server)
        return cached if cached is not None else await self.run(self._tools(Address.of(server)))

    async def call(self, server: UpstreamServer, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        return await self.run(self._call(Address.of(server), tool, arguments))

    def close_all(self) -> None:
        """End every session (stdio commands exit): tests between upstreams, and shutdown."""
        if self._loop is not None and self._pid == os.getpid():
            asyncio.run_coroutine_threadsafe(self._close_all(), self._loop).result(timeout=30)


POOL = Pool()
tools_of = POOL.tools_of
cached_tools = POOL.cached_tools
call = POOL.call
