"""A real upstream MCP server for the gateway tests, written with the SDK: served over
Streamable HTTP by uvicorn in a thread, or run over stdio as a command (``stdio_argv``, an entry
of GATEWAY_STDIO_COMMANDS). Each records what reached it (calls; over HTTP the Authorization
headers, over stdio the environment it was started with and who started it), so tests can tell."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn

from tests.support.processes import free_port
from tests.support.upstream_tools import build


@dataclass
class Upstream:
    url: str
    authorizations: list[str] = field(default_factory=list)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    session_ids: list[str] = field(default_factory=list)  # the Mcp-Session-Id of each request that had one


@contextmanager
def upstream_server(
    *, destructive_sql: bool = False, stateless: bool = False, port: int | None = None
) -> Iterator[Upstream]:
    """The tests' upstream (tests/support/upstream_tools.py) over Streamable HTTP: with sessions
    as most servers keep them, or stateless. Give ``port`` to start it again where it was (an
    upstream that restarted and forgot its sessions)."""
    port = port or free_port()
    seen = Upstream(url=f"http://127.0.0.1:{port}/mcp")
    server = build(lambda tool, arguments: seen.calls.append((tool, arguments)), destructive_sql=destructive_sql)
    app = server.streamable_http_app(stateless_http=stateless, json_response=True)

    async def recording(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            seen.authorizations.append(headers.get(b"authorization", b"").decode())
            if b"mcp-session-id" in headers:
                seen.session_ids.append(headers[b"mcp-session-id"].decode())
        await app(scope, receive, send)

    with served_app(recording, port):
        yield seen


@contextmanager
def served_app(app: Any, port: int) -> Iterator[None]:
    """An ASGI app (an upstream MCP server) served by uvicorn on ``port`` of loopback, in a thread,
    for the block."""
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    runner = uvicorn.Server(config)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not runner.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert runner.started, "the upstream MCP server did not start"
    try:
        yield
    finally:
        # The gateway keeps its session (and its notification stream) open: don't wait for it.
        runner.should_exit = runner.force_exit = True
        thread.join(timeout=10)


def stdio_argv(record: Path, *, destructive_sql: bool = False) -> list[str]:
    """The program and arguments of the same upstream over stdio; it appends what it sees to ``record``."""
    script = Path(__file__).with_name("upstream_tools.py")
    # -P: the script's folder (tests/support, which has an mcp.py) must not shadow the SDK.
    return [sys.executable, "-P", str(script), str(record), *(["--destructive-sql"] if destructive_sql else [])]


@dataclass(frozen=True)
class Start:
    env: list[str]  # the names of the environment variables the command was started with
    parent: int  # the process that started it


def stdio_record(record: Path) -> tuple[list[Start], list[tuple[str, dict[str, Any]]]]:
    """(each start, the calls) a stdio upstream wrote to ``record``."""
    lines = [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []
    starts = [Start(line["env"], line["parent"]) for line in lines if "env" in line]
    return starts, [(line["tool"], line["arguments"]) for line in lines if "tool" in line]
