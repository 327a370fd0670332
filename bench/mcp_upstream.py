"""An upstream MCP server for ``bench/mcp.py``: ``execute_sql`` plus filler tools (``tools/list``
of a realistic size), Streamable HTTP, stateless. A helper, not a benchmark (no ``run``).

Run by the benchmark as ``python -m bench.mcp_upstream <port> <tools>``.
"""

from __future__ import annotations

import sys

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from starlette.applications import Starlette


def app(tools: int) -> Starlette:
    server = MCPServer("bench-upstream")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def execute_sql(query: str) -> str:
        """Answer a query with a fixed row."""
        return f"1 row for {query}"

    for n in range(tools - 1):

        def filler(value: str) -> str:
            return value

        server.tool(name=f"filler_{n:02d}", description=f"Filler tool {n} of the benchmark.")(filler)
    return server.streamable_http_app(stateless_http=True, json_response=True)


def main() -> None:
    port, tools = int(sys.argv[1]), int(sys.argv[2])
    uvicorn.run(app(tools), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
