"""A stateless upstream called with plain JSON-RPC (gateway/plain.py): one POST per call from the
request's thread, on a kept-alive connection, with the upstream's own credential; a stateful
upstream still gets its calls on its session. What the agent and the operator see is what the
SDK's session gave them: the result, a new connection when the upstream restarted, the SDK's own
check of a result against the tool's declared output schema, and one trace from the agent's call
to the upstream's span."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx2
import mcp.shared._otel as sdk_otel
import pytest
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from agents.models import Agent
from agents.registry import load_manifest
from gateway import outcomes, plain, telemetry
from gateway.models import GatewayCall, UpstreamServer
from governance.kernel.principals import SYSTEM
from tests.support.keys import issue_key
from tests.support.manifests import manifest_text
from tests.support.processes import free_port
from tests.support.spans import Recorded
from tests.support.upstream import served_app, upstream_server

pytestmark = pytest.mark.django_db(transaction=True)

SQL = "mcp__supabase__execute_sql"  # agent.seo.vlevel's manifest grants it (read)
COUNT = "mcp__supabase__count_rows"
TOKEN = "upstream-secret-token"
TOOLS = "  tools:\n"


def vlevel(*extra_tools: str) -> tuple[Agent, str]:
    """agent.seo.vlevel (it grants mcp__supabase__execute_sql, read), with more tool entries."""
    text = manifest_text("agent.seo.vlevel").replace(TOOLS, TOOLS + "".join(extra_tools), 1)
    agent = load_manifest(text, actor=SYSTEM)[0].agent
    return agent, issue_key(agent=agent)


def agent_client(key: str) -> httpx2.Client:
    """An agent's HTTP client for /mcp: one kept-alive connection, so its requests are served by
    one thread of the plane (and the plain path reuses that thread's connection to the upstream)."""
    headers = {
        "Authorization": f"Bearer {key}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }
    return httpx2.Client(headers=headers, timeout=60)


def call(http: httpx2.Client, live_server: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tools/call as the SDK's client sends it (the express lane takes it); its result."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    response = http.post(f"{live_server.url}/mcp", json=body)
    assert response.status_code == 200, response.text
    return response.json()["result"]


def text_of(result: dict[str, Any]) -> str:
    return result["content"][0]["text"]


def refusal(result: dict[str, Any]) -> dict[str, Any]:
    assert result["isError"] is True, result
    return json.loads(text_of(result))


@pytest.fixture
def plain_posts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The method of each request the plain path sent (gateway/plain.py), in order."""
    sent: list[str] = []
    exchange = plain._exchange

    def recorded(connection: Any, path: str, headers: dict[str, str], body: dict[str, Any]) -> dict[str, Any]:
        sent.append(body["method"])
        return exchange(connection, path, headers, body)

    monkeypatch.setattr(plain, "_exchange", recorded)
    return sent


# --- Stateless or stateful ----------------------------------------------------------------------


def test_a_stateless_upstream_gets_one_post_per_call_and_no_session(live_server, plain_posts):
    _, key = vlevel()
    with upstream_server(stateless=True) as upstream, agent_client(key) as http:
        UpstreamServer.objects.create(name="supabase", url=upstream.url, internal=True)
        first = call(http, live_server, SQL, {"query": "select 1"})  # lists the upstream's tools first
        before = len(upstream.authorizations)  # every HTTP request the upstream received
        results = [call(http, live_server, SQL, {"query": f"select {n}"}) for n in (2, 3, 4)]
        received = len(upstream.authorizations) - before

    assert text_of(first) == "rows for select 1"
    assert [text_of(r) for r in results] == ["rows for select 2", "rows for select 3", "rows for select 4"]
    assert all(r["isError"] is False for r in [first, *results])
    assert results[0]["structuredContent"] == {"result": "rows for select 2"}
    assert received == 3  # one POST per call: no handshake, no session, nothing sent twice
    assert plain_posts == ["tools/call"] * 4  # each call a plain POST, the first one too
    assert upstream.session_ids == []
    assert upstream.calls == [("execute_sql", {"query": f"select {n}"}) for n in (1, 2, 3, 4)]


def test_a_stateful_upstream_still_gets_its_calls_on_its_session(live_server, plain_posts):
    _, key = vlevel()
    with upstream_server(stateless=False) as upstream, agent_client(key) as http:
        UpstreamServer.objects.create(name="supabase", url=upstream.url, internal=True)
        results = [call(http, live_server, SQL, {"query": f"select {n}"}) for n in (1, 2, 3)]
        before = len(upstream.session_ids)
        last = call(http, live_server, SQL, {"query": "select 4"})
        on_session = upstream.session_ids[before:]

    assert [text_of(r) for r in [*results, last]] == [f"rows for select {n}" for n in (1, 2, 3, 4)]
    assert upstream.session_ids
    assert len(set(upstream.session_ids)) == 1  # one session, opened once, for every call
    assert on_session == upstream.session_ids[:1] * len(on_session)
    assert len(on_session) >= 1  # the call carried the session's id
    assert plain_posts == []  # the SDK's session made every call
    assert upstream.calls == [("execute_sql", {"query": f"select {n}"}) for n in (1, 2, 3, 4)]


# --- Credentials --------------------------------------------------------------------------------


def test_the_upstreams_credential_is_sent_never_the_agents_key(live_server, monkeypatch):
    monkeypatch.setenv("UPSTREAM_TOKEN_SUPABASE", TOKEN)
    _, key = vlevel()
    with upstream_server(stateless=True) as upstream, agent_client(key) as http:
        UpstreamServer.objects.create(
            name="supabase", url=upstream.url, secret_name="UPSTREAM_TOKEN_SUPABASE", internal=True
        )
        results = [call(http, live_server, SQL, {"query": f"select {n}"}) for n in (1, 2)]

    assert [text_of(r) for r in results] == ["rows for select 1", "rows for select 2"]
    assert upstream.authorizations  # the handshake, the listing and each call
    assert set(upstream.authorizations) == {f"Bearer {TOKEN}"}
    assert not any(key in authorization for authorization in upstream.authorizations)
    assert key not in json.dumps(upstream.calls)


# --- An upstream that restarted -----------------------------------------------------------------


def test_a_restarted_upstream_gets_the_next_call_on_a_new_connection_once(live_server, monkeypatch):
    """The upstream closed the kept connection when it stopped: the next call sees it (the socket
    reads as closed, whatever its idle time) and opens a new one, instead of failing after sending."""
    monkeypatch.setattr(plain, "IDLE_REUSE", 600.0)  # only the socket's state can tell it is gone
    checks: list[bool] = []
    fresh = plain._Connection.fresh

    def checked(connection: plain._Connection) -> bool:
        checks.append(fresh(connection))
        return checks[-1]

    monkeypatch.setattr(plain._Connection, "fresh", checked)
    _, key = vlevel()
    port = free_port()
    with agent_client(key) as http:
        with upstream_server(stateless=True, port=port) as before:
            UpstreamServer.objects.create(name="supabase", url=before.url, internal=True)
            first = call(http, live_server, SQL, {"query": "select 1"})
            again = call(http, live_server, SQL, {"query": "select 2"})
        reused = list(checks)
        with upstream_server(stateless=True, port=port) as after:
            second = call(http, live_server, SQL, {"query": "select 3"})
    outcomes.WRITER.flush()

    assert reused[-1] is True  # the same agent connection's next call reused the kept connection
    assert checks[len(reused) :] == [False]  # after the restart, it was found closed: a new one
    assert [text_of(r) for r in (first, again, second)] == [
        "rows for select 1",
        "rows for select 2",
        "rows for select 3",
    ]
    assert before.calls == [("execute_sql", {"query": "select 1"}), ("execute_sql", {"query": "select 2"})]
    assert after.calls == [("execute_sql", {"query": "select 3"})]  # made once
    assert after.session_ids == []
    assert list(GatewayCall.objects.order_by("called_at").values_list("outcome", flat=True)) == ["ok"] * 3


# --- The output schema ---------------------------------------------------------------------------


COUNTED = {
    "type": "object",
    "properties": {"count": {"type": "integer"}},
    "required": ["count"],
}


@contextmanager
def counting_upstream() -> Iterator[tuple[str, list[str]]]:
    """A stateless upstream whose read-only ``count_rows`` declares an output schema (a count, an
    integer) and answers ``{"count": "many"}`` for the table ``logs``, breaking it; yields its URL
    and the tables it was asked about."""
    server = MCPServer("counting-upstream")
    asked: list[str] = []

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def count_rows(table: str) -> CallToolResult:
        """Count the rows of a table."""
        asked.append(table)
        count: Any = "many" if table == "logs" else 3
        return CallToolResult(
            content=[TextContent(type="text", text=json.dumps({"count": count}))], structured_content={"count": count}
        )

    # Declared by hand, with no model behind it: the upstream publishes it and does not check it.
    tool = server._tool_manager.get_tool("count_rows")
    assert tool is not None
    tool.fn_metadata.output_schema = COUNTED
    port = free_port()
    with served_app(server.streamable_http_app(stateless_http=True, json_response=True), port):
        yield f"http://127.0.0.1:{port}/mcp", asked


def test_a_result_breaking_the_tools_output_schema_is_an_upstream_failure(live_server):
    agent, key = vlevel(f"    - tool_id: {COUNT}\n      permissions: read\n      rate_limit: 10\n")
    with counting_upstream() as (url, asked), agent_client(key) as http:
        UpstreamServer.objects.create(name="supabase", url=url, internal=True)
        good = call(http, live_server, COUNT, {"table": "pages"})  # lists the tool, with its schema
        bad = call(http, live_server, COUNT, {"table": "logs"})
    outcomes.WRITER.flush()

    assert good["isError"] is False
    assert good["structuredContent"] == {"count": 3}
    answer = refusal(bad)
    assert answer == {"error": "The upstream server failed (RuntimeError).", "refusal": "UpstreamFailed"}
    assert "many" not in json.dumps(bad)  # the result that broke the contract never reaches the agent
    assert asked == ["pages", "logs"]  # it was made, once
    logged = GatewayCall.objects.filter(agent=agent).order_by("called_at")
    assert [(c.outcome, c.error_class) for c in logged] == [("ok", ""), ("upstream_failed", "RuntimeError")]
    assert logged[1].latency_ms is not None


# --- Telemetry -----------------------------------------------------------------------------------


SPANS = InMemorySpanExporter()
PROVIDER = TracerProvider()
PROVIDER.add_span_processor(SimpleSpanProcessor(SPANS))


@pytest.fixture
def otel(monkeypatch: pytest.MonkeyPatch) -> InMemorySpanExporter:
    """Our spans and the SDK's (the upstream's SERVER span) exported here for the test, whatever
    tracer provider the process has: OpenTelemetry's global one is set at most once, and other
    tests (tests/gateway/test_mcp_telemetry.py) set it to export elsewhere."""
    monkeypatch.setattr(telemetry, "_tracer", PROVIDER.get_tracer(telemetry.__name__))
    monkeypatch.setattr(sdk_otel, "_tracer", PROVIDER.get_tracer("mcp-python-sdk"))
    SPANS.clear()
    return SPANS


RECORDED = Recorded(SPANS)
spans, parent_of = RECORDED.named, RECORDED.parent_of


def test_the_upstreams_span_is_the_child_of_our_client_span_with_nothing_between(live_server, otel):
    _, key = vlevel()
    with upstream_server(stateless=True) as upstream, agent_client(key) as http:
        UpstreamServer.objects.create(name="supabase", url=upstream.url, internal=True)
        call(http, live_server, SQL, {"query": "select 1"})  # the listing, on the SDK's session
        SPANS.clear()
        result = call(http, live_server, SQL, {"query": "select secret_column"})

    assert result["isError"] is False
    (server,) = spans(f"tools/call {SQL}", SpanKind.SERVER)
    (client,) = spans("tools/call execute_sql", SpanKind.CLIENT)
    (received,) = spans("tools/call execute_sql", SpanKind.SERVER)
    assert parent_of(client).context.span_id == server.context.span_id
    # One hop: the upstream's span is our CLIENT span's child (no SDK send span in between).
    assert parent_of(received).context.span_id == client.context.span_id
    assert client.attributes["mcp.protocol.version"] == "2025-11-25"
    assert client.attributes["mcp.method.name"] == "tools/call"
    assert client.attributes["gen_ai.tool.name"] == "execute_sql"
    port = int(upstream.url.split(":")[2].split("/")[0])
    assert (client.attributes["server.address"], client.attributes["server.port"]) == ("127.0.0.1", port)
    assert [s.name for s in SPANS.get_finished_spans() if s.kind == SpanKind.CLIENT] == ["tools/call execute_sql"]
    assert "secret_column" not in json.dumps([dict(s.attributes or {}) for s in SPANS.get_finished_spans()])
