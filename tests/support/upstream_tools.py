"""The tools of the tests' upstream MCP server, shared by its HTTP and stdio forms.

Self-contained (the SDK only): the stdio form runs this file as a script, in the bare
environment the gateway gives a stdio command, so it cannot import the project.

    python -P tests/support/upstream_tools.py <record.jsonl> [--destructive-sql]

runs it over stdio, appending to ``record.jsonl`` one line per call and, first, the names of
the environment variables it was started with and the process that started it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

Record = Callable[[str, dict[str, Any]], None]


def build(record: Record, *, destructive_sql: bool = False) -> MCPServer:
    """``execute_sql`` (read-only, or marked destructive when asked), ``drop_table``
    (destructive), ``add_note`` (writes, not destructive), ``wipe`` (no annotations at all: MCP's
    defaults make it destructive),
    ``slow_report`` (sleeps) and ``classify_intent`` (a structured result, for contracts)."""
    server = MCPServer("supabase-test")
    sql_hints = ToolAnnotations(read_only_hint=not destructive_sql, destructive_hint=destructive_sql)

    @server.tool(annotations=sql_hints)
    def execute_sql(query: str) -> str:
        """Run a SQL query."""
        record("execute_sql", {"query": query})
        return f"rows for {query}"

    @server.tool(annotations=ToolAnnotations(destructive_hint=True))
    def drop_table(name: str) -> str:
        """Drop a table."""
        record("drop_table", {"name": name})
        return f"dropped {name}"

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
    def add_note(text: str) -> str:
        """Add a note: changes data without destroying any (additive)."""
        record("add_note", {"text": text})
        return "added"

    @server.tool()
    def wipe(all: bool = False) -> str:
        """Delete data; says nothing of what it does to the world."""
        record("wipe", {"all": all})
        return "wiped"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def slow_report(seconds: float) -> str:
        """Take a while to answer."""
        record("slow_report", {"seconds": seconds})
        time.sleep(seconds)
        return f"report after {seconds} s"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def classify_intent(label: str, confidence: float) -> dict[str, Any]:
        """Classify a request (seed 000's intent_ingestion shape; a test chooses the values)."""
        record("classify_intent", {"label": label, "confidence": confidence})
        return {"intent": {"label": label, "confidence": confidence}}

    return server


def main() -> None:
    path = sys.argv[1]

    def record(tool: str, arguments: dict[str, Any]) -> None:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"tool": tool, "arguments": arguments}) + "\n")

    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps({"env": sorted(os.environ), "parent": os.getppid()}) + "\n")
    build(record, destructive_sql="--destructive-sql" in sys.argv).run("stdio")


if __name__ == "__main__":
    main()
