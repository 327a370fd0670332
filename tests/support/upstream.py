"""A real upstream MCP server for the gateway tests, written with the SDK and served over
Streamable HTTP by uvicorn in a thread. It records the Authorization header of every request and
every call it receives, so tests can tell what reached it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

from tests.support.processes import free_port


@dataclass
class Upstream:
    url: str
    authorizations: list[str] = field(default_factory=list)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


@contextmanager
def upstream_server(*, destructive_sql: bool = False) -> Iterator[Upstream]:
    """``execute_sql`` (read-only, or marked destructive when asked) and ``drop_table``."""
    port = free_port()
    seen = Upstream(url=f"http://127.0.0.1:{port}/mcp")
    server = MCPServer("supabase-test")
    sql_hints = ToolAnnotations(read_only_hint=not destructive_sql, destructive_hint=destructive_sql)

    @server.tool(annotations=sql_hints)
    def execute_sql(query: str) -> str:
        """Run a SQL query."""
        seen.calls.append(("execute_sql", {"query": query}))
        return f"rows for {query}"

    @server.tool(annotations=ToolAnnotations(destructive_hint=True))
    def drop_table(name: str) -> str:
        """Drop a table."""
        seen.calls.append(("drop_table", {"name": name}))
        return f"dropped {name}"

    app = server.streamable_http_app(stateless_http=True, json_response=True)

    async def recording(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            seen.authorizations.append(headers.get(b"authorization", b"").decode())
        await app(scope, receive, send)

    config = uvicorn.Config(recording, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    runner = uvicorn.Server(config)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not runner.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert runner.started, "the upstream MCP server did not start"
    try:
        yield seen
    finally:
        runner.should_exit = True
        thread.join(timeout=10)
