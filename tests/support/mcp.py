"""The SDK's own MCP client, as an agent uses it, against /mcp over real HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from gateway import outcomes


@asynccontextmanager
async def connected(url: str, http: httpx2.AsyncClient) -> AsyncIterator[ClientSession]:
    """An initialized SDK client session on ``url``/mcp over ``http``."""
    async with (
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def mcp_session(url: str, key: str, work: Any) -> Any:
    """Run ``work(session)`` with an initialized SDK client session; returns its result, once
    the plane has written the outcomes of the calls it made (after their answers, in a thread of
    its own: gateway/outcomes.py), so that a test reads them as an operator would a moment later."""

    async def main() -> Any:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http,
            connected(url, http) as session,
        ):
            return await work(session)

    try:
        return anyio.run(main)
    finally:
        outcomes.WRITER.flush()
