"""Calls to upstream MCP servers through one long-lived client session per server and process.

Opening an MCP session costs an ``initialize`` round trip (and, over stdio, starting a process),
several times the cost of a call. So each process keeps one SDK ``ClientSession`` per upstream,
opened on first use and shared by every thread: the sessions live on one event loop, in a daemon
thread of the process (started again after a fork), and callers hand their calls to it. The SDK's
session multiplexes concurrent requests by id.

Two pools: a web process's (``POOL``) speaks only Streamable HTTP, and refuses to start a command;
a Celery worker's (``WORKER_POOL``) also runs stdio upstreams, with the commands the deployment
allows (GATEWAY_STDIO_COMMANDS), for the web processes that ask it (gateway/stdio.py). An HTTP
upstream is reached through the outbound guard of provider profiles (sessions/providers/outbound.py):
its URL is checked again whenever a session opens (DNS answers change after an operator saved it),
and connections go to the addresses that were checked, never to a second resolution of the name.

The agent's key never goes upstream: the only credential sent is the server's own, read from the
environment variable an operator named: as a bearer token over HTTP, or as that one variable in
a stdio command's environment, besides the variables its allow-list entry names (it inherits
nothing else of the worker's environment: no database URL, no secret key). Tool lists are kept
for ``LIST_TTL`` seconds, so an agent's ``tools/list`` does not ask every upstream every time; an
upstream that failed is not asked again for ``RETRY_AFTER_FAILURE`` seconds.
"""

from __future__ import annotations

import asyncio
import functools
import os
import ssl
import threading
import time
from collections.abc import Coroutine, Iterable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import httpcore2
import httpx2
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import CONNECTION_CLOSED, INVALID_REQUEST

from gateway import plain, telemetry
from gateway.commands import StdioCommand
from gateway.models import UpstreamServer
from governance.kernel import secrets
from sessions.providers import outbound

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


class CommandNotAllowed(Exception):
    """The server names no command the deployment allows (any more)."""


class CommandsRunInWorkers(Exception):
    """A web process's pool was asked to start a command: stdio upstreams run in the workers."""


class RemoteFailure(Exception):
    """A worker reached the upstream for a web process and it failed: ``error_class`` is the
    failure's class there."""

    def __init__(self, error_class: str) -> None:
        super().__init__(error_class)
        self.error_class = error_class


def failure_class(exc: BaseException) -> str:
    """The class of what went wrong, as the call log and the pages name it."""
    cause = root_cause(exc)
    return cause.error_class if isinstance(cause, RemoteFailure) else type(cause).__name__


@dataclass(frozen=True)
class Address:
    """What identifies a live session: a change of any of it (an operator edited the server, the
    deployment changed its command) opens a new one."""

    pk: int
    name: str
    transport: str
    url: str
    internal: bool
    command: StdioCommand | None
    secret_name: str

    @classmethod
    def of(cls, server: UpstreamServer) -> Address:
        return cls(
            server.pk,
            server.name,
            server.transport,
            server.url,
            server.internal,
            server.stdio_command,
            server.secret_name,
        )

    def secret(self) -> str:
        return secrets.value(self.secret_name, prefix=secrets.UPSTREAM_TOKEN_PREFIX)

    def peer(self) -> dict[str, Any]:
        """The upstream's network attributes on the spans and metrics of our requests to it."""
        return telemetry.peer(self.transport, self.url)


class _CheckedAddresses(httpcore2.AsyncNetworkBackend):
    """Opens connections to the addresses the outbound guard checked, never to the name: the
    URL's host stays the Host header and the TLS server name (certificate checks included). A
    client has one destination (its upstream's URL, and no redirects are followed)."""

    def __init__(self, target: outbound.Target) -> None:
        self._target = target
        self._backend = httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        error: Exception = httpcore2.ConnectError("no checked address to connect to")
        for address in self._target.addresses:
            try:
                return await self._backend.connect_tcp(address, port, timeout, local_address, socket_options)
            except httpcore2.ConnectError as exc:
                error = exc
        raise error

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None
    ) -> httpcore2.AsyncNetworkStream:
        raise httpcore2.ConnectError("an upstream is never reached over a Unix socket")

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


def _checked_transport(target: outbound.Target) -> httpx2.AsyncHTTPTransport:
    """httpx's transport on a connection pool that connects only to ``target``'s addresses (its
    constructor takes no network backend, so its pool is replaced by one that does)."""
    transport = httpx2.AsyncHTTPTransport(verify=_TLS, trust_env=False)
    transport._pool = httpcore2.AsyncConnectionPool(
        ssl_context=_TLS,
        max_connections=100,
        max_keepalive_connections=20,
        keepalive_expiry=5.0,
        network_backend=_CheckedAddresses(target),
    )
    return transport


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
            if address.command is None:
                raise CommandNotAllowed(f"{address.name} names no command GATEWAY_STDIO_COMMANDS allows")
            command, *args = address.command.argv
            env = {name: os.environ[name] for name in address.command.env if name in os.environ}
            if address.secret_name:
                env[address.secret_name] = address.secret()
            params = StdioServerParameters(command=command, args=args, env=env)
            read, write = await stack.enter_async_context(stdio_client(params))
            return read, write
        # Checked now, not only when saved: a row of an earlier release, or a name that resolves
        # elsewhere since, is refused before anything is sent.
        target = await asyncio.to_thread(outbound.check, address.url, internal=address.internal)
        token = address.secret()
        http = await stack.enter_async_context(
            httpx2.AsyncClient(
                headers={"Authorization": f"Bearer {token}"} if token else {},
                timeout=HTTP_TIMEOUT,
                transport=_checked_transport(target),
                trust_env=False,  # no proxy from the environment: it would connect instead of us
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
    """The sessions of one process, on one event loop in a daemon thread. Only a pool that
    ``runs_commands`` (a worker's) starts stdio upstreams."""

    def __init__(self, *, runs_commands: bool) -> None:
        self.runs_commands = runs_commands
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = 0
        self._links: dict[int, _Link] = {}
        self._lists: dict[Address, tuple[float, list[types.Tool]]] = {}
        self._latest: dict[str, Address] = {}  # by server name: the address its last list came from
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
        if address.transport == UpstreamServer.Transport.STDIO and not self.runs_commands:
            raise CommandsRunInWorkers(address.name)
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

    async def _tools(self, address: Address, *, kept: bool = True) -> list[types.Tool]:
        """The upstream's tools: the list kept for a while unless ``kept`` is False (asked now)."""
        now = time.monotonic()
        cached = self._lists.get(address)
        if kept and cached is not None and now - cached[0] < LIST_TTL:
            return cached[1]
        if kept and now - self._failures.get(address, -RETRY_AFTER_FAILURE) < RETRY_AFTER_FAILURE:
            raise Unreachable(address.name)

        async def listing(session: ClientSession) -> list[types.Tool]:
            tools: list[types.Tool] = []
            cursor = None
            while True:
                params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                page = await telemetry.client_request(
                    "tools/list", session, address.peer(), functools.partial(session.list_tools, params=params)
                )
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
        self._latest[address.name] = address
        return tools

    async def _call(self, address: Address, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        async def calling(session: ClientSession) -> types.CallToolResult:
            return await telemetry.client_request(
                "tools/call", session, address.peer(), lambda: session.call_tool(tool, arguments), tool=tool
            )

        return await self._with_session(address, calling, idempotent=False)

    async def _close_all(self) -> None:
        links, self._links = list(self._links.values()), {}
        for link in links:
            link.close()
        await asyncio.gather(*(link.task for link in links), return_exceptions=True)
        self._lists.clear()
        self._latest.clear()
        self._failures.clear()

    def cached_tools(self, server: UpstreamServer) -> list[types.Tool] | None:
        """The upstream's list if one fresh enough is kept, read from the caller's thread."""
        cached = self._lists.get(Address.of(server))
        return cached[1] if cached is not None and time.monotonic() - cached[0] < LIST_TTL else None

    def kept(self, name: str) -> tuple[Address, list[types.Tool]] | None:
        """The address and tools of the last fresh list kept of the server named ``name``: what
        the gateway's admission checks against the server's row (is it still that server?)."""
        address = self._latest.get(name)
        if address is None:
            return None
        cached = self._lists.get(address)
        return (address, cached[1]) if cached is not None and time.monotonic() - cached[0] < LIST_TTL else None

    async def tools_of(self, server: UpstreamServer) -> list[types.Tool]:
        cached = self.cached_tools(server)
        return cached if cached is not None else await self.run(self._tools(Address.of(server)))

    def _wait(self, work: Coroutine[Any, Any, T]) -> T:
        """Run ``work`` on the pool's loop and wait for it from a synchronous caller (a task),
        at most as long as opening a session and one call may take."""
        future = asyncio.run_coroutine_threadsafe(work, self._running_loop())
        try:
            return future.result(OPEN_TIMEOUT + CALL_TIMEOUT)
        except TimeoutError:
            future.cancel()
            raise

    def list_now(self, server: UpstreamServer) -> list[types.Tool]:
        """The upstream's tools, asked now: a worker answering for the web processes."""
        return self._wait(self._tools(Address.of(server), kept=False))

    def tools_now(self, server: UpstreamServer) -> list[types.Tool]:
        """``tools_of`` from a synchronous caller: the kept list, or asked now."""
        cached = self.cached_tools(server)
        return cached if cached is not None else self._wait(self._tools(Address.of(server)))

    def call_now(self, server: UpstreamServer, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        return self._wait(self._call(Address.of(server), tool, arguments))

    def close_all(self) -> None:
        """End every session (stdio commands exit): tests between upstreams, and shutdown."""
        plain.forget()
        if self._loop is not None and self._pid == os.getpid():
            asyncio.run_coroutine_threadsafe(self._close_all(), self._loop).result(timeout=30)


POOL = Pool(runs_commands=False)
WORKER_POOL = Pool(runs_commands=True)
