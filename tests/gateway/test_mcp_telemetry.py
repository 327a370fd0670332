"""/mcp's telemetry in OpenTelemetry's vocabulary for MCP (gateway/telemetry.py): the spans an
operator's tracing backend shows and the durations it charts, read back from an in-memory span
exporter and metric reader.

The agent (the SDK's client), the plane (Django's live server) and the upstream (uvicorn) run in
this process, so one exporter holds every side's spans: the agent's request, our SERVER span, our
CLIENT span to the upstream, and the upstream's own SERVER span, all in one trace."""

from __future__ import annotations

import json
import uuid
from typing import Any, cast

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp_types import RequestParamsMeta
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import Histogram, MeterProvider
from opentelemetry.sdk.metrics.export import AggregationTemporality, HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.metrics.export import Histogram as HistogramData
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from agents.models import Agent, Job
from agents.registry import load_manifest
from gateway import upstream
from gateway.models import UpstreamServer
from governance.kernel.principals import SYSTEM
from tests.support.jobs import submit_job
from tests.support.keys import issue_key
from tests.support.manifests import load, manifest_text
from tests.support.mcp import mcp_session
from tests.support.spans import Recorded
from tests.support.upstream import stdio_argv, upstream_server

pytestmark = pytest.mark.django_db(transaction=True)

SQL = "mcp__supabase__execute_sql"  # agent.seo.vlevel's manifest grants it (read)
ENVELOPE = {
    "intent": "seo_audit",
    "scope": {"entityType": "page", "entityIds": ["p1"]},
    "payload": {"urls": ["https://private.example/secret-page"], "depth": 1},
    "context": {"source": "manual"},
}
SPANS = InMemorySpanExporter()
# Delta: each collection holds what was recorded since the one before, so a test sees its own requests.
READER = InMemoryMetricReader(preferred_temporality={Histogram: AggregationTemporality.DELTA})


@pytest.fixture
def otel() -> InMemorySpanExporter:
    """The process's tracer and meter providers export here (set once: OpenTelemetry's globals
    cannot be replaced), emptied for each test."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(SPANS))
        trace.set_tracer_provider(provider)
        metrics.set_meter_provider(MeterProvider(metric_readers=[READER]))
    SPANS.clear()
    READER.get_metrics_data()
    return SPANS


@pytest.fixture
def vlevel(transactional_db) -> tuple[Agent, str]:
    agent = load("agent.seo.vlevel")
    return agent, issue_key(agent=agent)


@pytest.fixture
def supabase():
    with upstream_server() as served:
        UpstreamServer.objects.create(name="supabase", url=served.url, internal=True)
        yield served


RECORDED = Recorded(SPANS)
spans, parent_of = RECORDED.named, RECORDED.parent_of


def durations(name: str) -> list[HistogramDataPoint]:
    data = READER.get_metrics_data()
    found: list[HistogramDataPoint] = []
    for resource in data.resource_metrics if data else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    assert metric.unit == "s"
                    assert isinstance(metric.data, HistogramData)  # a histogram, as the conventions define it
                    found.extend(metric.data.data_points)
    return found


def recorded_text() -> str:
    """Every attribute of every span, link and data point recorded so far, as one text."""
    values: list[Any] = []
    for span in SPANS.get_finished_spans():
        values += [span.name, dict(span.attributes or {}), *(dict(link.attributes or {}) for link in span.links)]
    return json.dumps(values, default=str)


def for_job(job: Job) -> RequestParamsMeta:
    """The ``_meta`` of a call made for ``job`` (a key of the gateway's, unknown to the SDK's types)."""
    return cast(RequestParamsMeta, {"jobId": str(job.pk)})


def call(
    key: str, live_server: Any, name: str, arguments: dict[str, Any], meta: RequestParamsMeta | None = None
) -> Any:
    async def work(session: ClientSession) -> Any:
        return await session.call_tool(name, arguments, meta=meta)

    return mcp_session(live_server.url, key, work)


def test_tools_list_is_a_server_span_under_the_agents_request_and_a_duration(live_server, vlevel, otel):
    _, key = vlevel

    async def work(session: ClientSession) -> Any:
        return await session.list_tools()

    mcp_session(live_server.url, key, work)

    (server,) = spans("tools/list", SpanKind.SERVER)
    attributes = dict(server.attributes or {})
    assert attributes["mcp.method.name"] == "tools/list"
    assert attributes["mcp.protocol.version"]
    assert attributes["jsonrpc.request.id"]
    assert (attributes["network.transport"], attributes["network.protocol.name"]) == ("tcp", "http")
    assert attributes["agent.id"] == "agent.seo.vlevel"
    assert "error.type" not in attributes
    # The agent's client put its span in params._meta.traceparent: ours is its child.
    agent_request = parent_of(server)
    assert (agent_request.kind, agent_request.attributes["mcp.method.name"]) == (SpanKind.CLIENT, "tools/list")

    (point,) = [
        p for p in durations("mcp.server.operation.duration") if p.attributes["mcp.method.name"] == "tools/list"
    ]
    assert point.count == 1
    assert point.sum > 0
    assert point.explicit_bounds[:3] == (0.01, 0.02, 0.05)  # the conventions' buckets
    assert "error.type" not in point.attributes
    assert key not in recorded_text()


def test_a_traceparent_in_meta_is_the_parent_of_the_server_span(live_server, vlevel, otel):
    _, key = vlevel
    trace_id, span_id = uuid.uuid4().hex, uuid.uuid4().hex[:16]
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "ping",
        "params": {"_meta": {"traceparent": f"00-{trace_id}-{span_id}-01"}},
    }
    headers = {
        "Authorization": f"Bearer {key}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }

    response = httpx2.post(f"{live_server.url}/mcp", json=body, headers=headers)

    assert response.status_code == 200, response.text
    (server,) = spans("ping", SpanKind.SERVER)
    assert (f"{server.context.trace_id:032x}", f"{server.parent.span_id:016x}") == (trace_id, span_id)
    assert server.parent.is_remote
    assert server.attributes["jsonrpc.request.id"] == "7"


def test_a_platform_tool_call_is_an_execute_tool_span_without_its_arguments(live_server, vlevel, otel):
    _, key = vlevel

    result = call(key, live_server, "submit_job", ENVELOPE)

    assert not result.is_error, result.content
    (server,) = spans("tools/call submit_job", SpanKind.SERVER)
    attributes = dict(server.attributes or {})
    assert attributes["mcp.method.name"] == "tools/call"
    assert (attributes["gen_ai.operation.name"], attributes["gen_ai.tool.name"]) == ("execute_tool", "submit_job")
    assert "error.type" not in attributes
    assert server.status.status_code != StatusCode.ERROR
    # The arguments are the agent's data; the answer too (the job's id).
    text = recorded_text()
    assert "private.example" not in text
    assert result.structured_content["jobId"] not in text

    (point,) = [
        p for p in durations("mcp.server.operation.duration") if p.attributes["mcp.method.name"] == "tools/call"
    ]
    assert point.attributes["gen_ai.tool.name"] == "submit_job"
    assert point.attributes["gen_ai.operation.name"] == "execute_tool"
    assert "error.type" not in point.attributes


def test_an_upstream_call_is_one_trace_from_the_agent_through_the_gateway_to_the_upstream(
    live_server, vlevel, supabase, otel
):
    agent, key = vlevel
    job = submit_job(agent, {"urls": ["https://shop.test/a"]})

    async def work(session: ClientSession) -> Any:
        with trace.get_tracer("the agent").start_as_current_span("agent step"):
            return await session.call_tool(SQL, {"query": "select secret_column"}, meta=for_job(job))

    result = mcp_session(live_server.url, key, work)

    assert not result.is_error, result.content
    assert supabase.calls == [("execute_sql", {"query": "select secret_column"})]
    (server,) = spans(f"tools/call {SQL}", SpanKind.SERVER)
    (client,) = spans("tools/call execute_sql", SpanKind.CLIENT)
    (received,) = spans("tools/call execute_sql", SpanKind.SERVER)
    # The agent's step -> its request -> our server span -> our call to the upstream -> the SDK's
    # send (which put the context in the upstream request's params._meta) -> the upstream's span.
    assert parent_of(parent_of(server)).name == "agent step"
    assert parent_of(client).context.span_id == server.context.span_id
    sent = parent_of(received)
    assert (sent.kind, parent_of(sent).context.span_id) == (SpanKind.CLIENT, client.context.span_id)

    assert dict(server.attributes or {}) | {"gen_ai.tool.name": SQL} == dict(server.attributes or {})
    assert server.attributes["gen_ai.operation.name"] == "execute_tool"
    port = int(supabase.url.split(":")[2].split("/")[0])
    assert {key: client.attributes.get(key) for key in ("server.address", "server.port", "network.transport")} == {
        "server.address": "127.0.0.1",
        "server.port": port,
        "network.transport": "tcp",
    }
    assert client.attributes["mcp.method.name"] == "tools/call"
    assert (client.attributes["gen_ai.tool.name"], client.attributes["gen_ai.operation.name"]) == (
        "execute_sql",
        "execute_tool",
    )
    assert client.attributes["mcp.protocol.version"]
    # The job's trace: its traceId is the agent's, so the span names it and links to that trace.
    assert (server.attributes["job.id"], server.attributes["job.trace_id"]) == (str(job.pk), str(job.trace_id))
    (link,) = server.links
    assert link.context.trace_id == job.trace_id.int
    assert link.attributes["job.id"] == str(job.pk)
    assert "secret_column" not in recorded_text()

    # The gateway listed the upstream's tools first (none were kept): that request has its span too.
    (listing,) = spans("tools/list", SpanKind.CLIENT)
    assert listing.attributes["server.port"] == port
    (point,) = [
        p for p in durations("mcp.client.operation.duration") if p.attributes["mcp.method.name"] == "tools/call"
    ]
    assert dict(point.attributes) == {
        "mcp.method.name": "tools/call",
        "mcp.protocol.version": client.attributes["mcp.protocol.version"],
        "gen_ai.tool.name": "execute_sql",
        "gen_ai.operation.name": "execute_tool",
        "network.transport": "tcp",
        "network.protocol.name": "http",
        "server.address": "127.0.0.1",
        "server.port": port,
    }


def test_a_refused_call_is_an_error_span_and_a_duration_with_its_error_type(live_server, vlevel, supabase, otel):
    _, key = vlevel
    ungranted = "mcp__supabase__drop_table"

    result = call(key, live_server, ungranted, {"name": "pages"})

    assert result.is_error
    assert supabase.calls == []
    (server,) = spans(f"tools/call {ungranted}", SpanKind.SERVER)
    assert server.attributes["error.type"] == "tool_error"
    assert server.attributes["gateway.refusal"] == "NotGranted"
    assert server.status.status_code == StatusCode.ERROR
    assert not spans("tools/call drop_table", SpanKind.CLIENT)  # nothing went upstream
    (point,) = [
        p for p in durations("mcp.server.operation.duration") if p.attributes["mcp.method.name"] == "tools/call"
    ]
    assert point.attributes["error.type"] == "tool_error"
    # A name the caller chose and nobody granted is no label of the metric.
    assert "gen_ai.tool.name" not in point.attributes


def test_a_call_naming_another_agents_job_joins_no_trace(live_server, vlevel, supabase, otel):
    _, key = vlevel
    text = manifest_text("agent.seo.vlevel").replace("agent.seo.vlevel", "agent.seo.b")
    theirs = submit_job(load_manifest(text, actor=SYSTEM)[0].agent, {"urls": ["https://shop.test/b"]})

    result = call(key, live_server, SQL, {"query": "select 1"}, meta=for_job(theirs))

    assert result.is_error
    (server,) = spans(f"tools/call {SQL}", SpanKind.SERVER)
    assert server.attributes["gateway.refusal"] == "InvalidInput"
    assert not server.links
    assert "job.id" not in server.attributes
    assert str(theirs.trace_id) not in recorded_text()


def test_a_refused_resource_read_names_the_uri_and_the_json_rpc_error(live_server, vlevel, otel):
    _, key = vlevel
    uri = "governance://no-such-resource"

    async def work(session: ClientSession) -> Any:
        try:
            await session.read_resource(uri)
        except Exception as exc:
            return exc
        return None

    assert mcp_session(live_server.url, key, work) is not None

    (server,) = spans("resources/read", SpanKind.SERVER)
    assert server.attributes["mcp.resource.uri"] == uri
    assert server.attributes["error.type"] == "-32602"
    (point,) = [
        p for p in durations("mcp.server.operation.duration") if p.attributes["mcp.method.name"] == "resources/read"
    ]
    assert point.attributes["error.type"] == "-32602"
    assert "mcp.resource.uri" not in point.attributes  # one series per URI would never end


def test_a_malformed_call_is_a_json_rpc_error_and_its_made_up_name_no_label(live_server, vlevel, otel):
    _, key = vlevel
    body = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "made_up_1234", "arguments": 5}}
    headers = {
        "Authorization": f"Bearer {key}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }

    response = httpx2.post(f"{live_server.url}/mcp", json=body, headers=headers)

    assert response.json()["error"]["code"] == -32602
    (server,) = spans("tools/call made_up_1234", SpanKind.SERVER)
    assert server.attributes["error.type"] == "-32602"
    (point,) = [
        p for p in durations("mcp.server.operation.duration") if p.attributes["mcp.method.name"] == "tools/call"
    ]
    assert point.attributes["error.type"] == "-32602"
    assert "gen_ai.tool.name" not in point.attributes


def test_a_call_to_a_stdio_upstream_is_a_client_span_over_a_pipe(tmp_path, settings, otel, transactional_db):
    """What a worker runs for a web process (gateway/stdio.py): the same CLIENT span, over a pipe."""
    settings.GATEWAY_STDIO_COMMANDS = {"supabase": {"argv": stdio_argv(tmp_path / "stdio.jsonl")}}
    server = UpstreamServer.objects.create(name="supabase", transport="stdio", command="supabase")
    try:
        result = upstream.WORKER_POOL.call_now(server, "execute_sql", {"query": "select 1"})
    finally:
        upstream.WORKER_POOL.close_all()

    assert not result.is_error, result.content
    (client,) = spans("tools/call execute_sql", SpanKind.CLIENT)
    assert client.attributes["network.transport"] == "pipe"
    assert "server.address" not in client.attributes
    (point,) = [
        p for p in durations("mcp.client.operation.duration") if p.attributes["mcp.method.name"] == "tools/call"
    ]
    assert point.attributes["network.transport"] == "pipe"
