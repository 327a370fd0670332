"""Calls to upstream MCP servers, with the SDK's client over Streamable HTTP.

The agent's key never goes upstream: the only credential sent is the server's own token, read
from the environment variable an operator named. Tool lists are kept for ``LIST_TTL`` seconds
per process, so an agent's ``tools/list`` does not ask every upstream every time.
"""

from __future__ import annotations

import os
import ssl
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from gateway.models import UpstreamServer

LIST_TTL = 60.0
RETRY_AFTER_FAILURE = 15.0  # an unreachable upstream is not asked again by every tools/list
TIMEOUT = httpx2.Timeout(60.0, connect=5.0)
# One TLS context per process: building one per client costs ~20 ms, more than the call itself.
_TLS = ssl.create_default_context()
_lists: dict[tuple[str, str], tuple[float, list[types.Tool]]] = {}
_failures: dict[tuple[str, str], float] = {}


class Unreachable(Exception):
    """The upstream failed to list its tools a moment ago; it is asked again after a pause."""


@asynccontextmanager
async def _session(server: UpstreamServer) -> AsyncIterator[ClientSession]:
    token = os.environ.get(server.secret_name, "") if server.secret_name else ""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=TIMEOUT, verify=_TLS) as http,
        streamable_http_client(server.url, http_client=http) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def tools_of(server: UpstreamServer) -> list[types.Tool]:
    """The upstream's tools, as it lists them (cached for ``LIST_TTL`` seconds)."""
    key = (server.name, server.url)
    now = time.monotonic()
    cached = _lists.get(key)
    if cached is not None and now - cached[0] < LIST_TTL:
        return cached[1]
    if now - _failures.get(key, -RETRY_AFTER_FAILURE) < RETRY_AFTER_FAILURE:
        raise Unreachable(server.name)
    try:
        async with _session(server) as session:
            tools = (await session.list_tools()).tools
    except Exception:
        _failures[key] = time.monotonic()
        raise
    _failures.pop(key, None)
    _lists[key] = (time.monotonic(), tools)
    return tools


async def call(server: UpstreamServer, tool: str, arguments: dict) -> types.CallToolResult:
    async with _session(server) as session:
        return await session.call_tool(tool, arguments)
