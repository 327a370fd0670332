"""Traces (governance/kernel/tracing.py) and the ids on every log line (governance/kernel/logs.py).

The trace test runs the real processes: gunicorn and a Celery worker on the test database, both
exporting over OTLP/HTTP to a receiver written here (a local http.server decoding the protobuf
export requests), and an agent driving a job over HTTP whose result queues a task."""

from __future__ import annotations

import json
import subprocess
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from governance.kernel import logs, tracing
from governance.kernel.principals import SYSTEM
from sessions import automations
from tests.support.hosted import PROFILE, allow_profiles, local_profile, openai_answer
from tests.support.http_servers import serving
from tests.support.keys import issue_key
from tests.support.processes import (
    BASE_DIR,
    PYTHON,
    celery_worker_process,
    database_url_of_tests,
    gunicorn,
    process_env,
    wait_for,
)

GOOD = {
    "success": True,
    "data": {"scores": [{"url": "https://shop.test/a", "level": "V2"}], "recommendations": []},
    "confidence": 0.9,
}
SERVER, PRODUCER, CONSUMER = 2, 4, 5  # opentelemetry.proto.trace.v1.Span.SpanKind


@dataclass(frozen=True)
class Span:
    service: str
    name: str
    kind: int
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]


@dataclass
class Receiver:
    """What the OTLP/HTTP receiver was sent."""

    url: str = ""
    spans: list[Span] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def where(self, **wanted: Any) -> list[Span]:
        with self.lock:
            return [s for s in self.spans if all(getattr(s, k) == v for k, v in wanted.items())]

    def in_trace(self, trace_id: str) -> dict[str, Span]:
        return {s.span_id: s for s in self.where(trace_id=trace_id)}


def _value(any_value: Any) -> Any:
    return getattr(any_value, any_value.WhichOneof("value")) if any_value.WhichOneof("value") else None


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    state = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.path != "/v1/traces":  # the metrics (/v1/metrics) are gateway/telemetry.py's tests'
                self._reply(b"")
                return
            export = ExportTraceServiceRequest.FromString(body)
            received = []
            for resource_spans in export.resource_spans:
                resource = {kv.key: _value(kv.value) for kv in resource_spans.resource.attributes}
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        received.append(
                            Span(
                                service=resource.get("service.name", ""),
                                name=span.name,
                                kind=span.kind,
                                trace_id=span.trace_id.hex(),
                                span_id=span.span_id.hex(),
                                parent_id=span.parent_span_id.hex(),
                                attributes={kv.key: _value(kv.value) for kv in span.attributes},
                            )
                        )
            with state.lock:
                state.spans.extend(received)
            self._reply(ExportTraceServiceResponse().SerializeToString())

        def _reply(self, reply: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with serving(Handler) as state.url:
        yield state


def _call(base: str, method: str, path: str, key: str, body: Any = None, **headers: str) -> tuple[int, Any, Any]:
    request = urllib.request.Request(
        f"{base}/api/v1{path}",
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json", **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null"), response.headers
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null"), error.headers


def _envelope(trace_id: str, url: str) -> dict[str, Any]:
    return {
        "traceId": trace_id,
        "intent": "seo_audit",
        "scope": {"entityType": "page"},
        "payload": {"urls": [url]},
        "context": {"source": "manual"},
    }


def _json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


@pytest.mark.process
@pytest.mark.django_db(transaction=True)
def test_one_job_is_one_trace_from_the_request_to_the_task_it_queued(tmp_path, vlevel, receiver, model_server):
    # A job finishing starts this EVENT automation, hosted on a model: the result request queues
    # the model call (sessions.call_provider), which the worker makes.
    local_profile(model_server.url)
    allow_profiles("agent.seo.vlevel", PROFILE)
    model_server.body = openai_answer(json.dumps({"preText": "Nothing to fix.", "completed": True}))
    automations.create_automation(
        vlevel,
        actor=SYSTEM,
        name="after each job",
        messages=[{"text": "Look at what changed."}],
        trigger="EVENT",
        event="job.finished",
        profile_name=PROFILE,
    )
    key = issue_key(agent=vlevel)
    otel = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "100", "LOG_FORMAT": "json"}
    # The worker batches for a minute: its spans reach the receiver only through the flush its
    # pool processes make when the worker stops.
    # LOG_LEVEL=DEBUG: Celery's "Task ... succeeded" line, read below, is a routine line at DEBUG.
    batched = {**otel, "OTEL_BSP_SCHEDULE_DELAY": "60000", "LOG_LEVEL": "DEBUG"}
    with celery_worker_process(tmp_path, wait_ready=True, **batched) as worker:
        queue = {"CELERY_QUEUE": worker.queue, "CELERY_BROKER_URL": worker.broker_url}
        with gunicorn(tmp_path, workers=1, threads=4, **queue, **otel) as base:
            agent_trace = str(uuid.uuid4())
            status, job, _ = _call(base, "POST", "/jobs", key, _envelope(agent_trace, "https://shop.test/a"))
            assert status == 201, job
            job_id = job["jobId"]
            assert _call(base, "POST", f"/jobs/{job_id}/lease", key, {})[0] == 200
            status, result, headers = _call(
                base, "POST", f"/jobs/{job_id}/result", key, GOOD, **{"X-Request-ID": "res-1"}
            )
            assert (status, result["status"], headers["X-Request-ID"]) == (200, "succeeded", "res-1")

            # The worker's log lines of the task name the request that queued it and the job.
            def task_lines() -> list[dict[str, Any]]:
                lines = [line for line in _json_lines(worker.log.read_text()) if line.get("job_id") == job_id]
                done = any(
                    "sessions.call_provider" in line["message"] and "succeeded" in line["message"] for line in lines
                )
                return lines if done else []

            lines = wait_for(task_lines, timeout=60, interval=0.2)
            assert lines, worker.log.read_text()[-3000:]
            assert not receiver.where(service="governance-worker")

    runs = receiver.where(service="governance-worker", name="run/sessions.call_provider", kind=CONSUMER)
    assert [run.attributes.get("job.id") for run in runs] == [job_id]
    (run,) = runs
    assert (run.attributes["job.trace_id"], run.attributes["agent.id"]) == (agent_trace, "agent.seo.vlevel")
    # Every line the task's run logged: the worker's "received" line and the instrumentation's own
    # debug lines come before the run's span opens.
    ran = [
        line for line in lines if "received" not in line["message"] and not line["logger"].startswith("opentelemetry")
    ]
    assert ran, lines
    assert {(line["request_id"], line["task_id"], line.get("trace_id")) for line in ran} == {
        ("res-1", run.attributes["messaging.message.id"], run.trace_id)
    }

    # Up the parent chain from the worker's span: the web's publish span, then its request span.
    spans = receiver.in_trace(run.trace_id)
    chain = [run]
    while chain[-1].parent_id in spans:
        chain.append(spans[chain[-1].parent_id])
    assert chain[-1].parent_id == ""  # the chain reaches the root: no span went missing
    publish = chain[1]
    assert (publish.service, publish.kind, publish.name) == (
        "governance-web",
        PRODUCER,
        "apply_async/sessions.call_provider",
    )
    request = chain[-1]
    assert (request.service, request.kind, request.attributes["http.method"]) == ("governance-web", SERVER, "POST")
    assert (request.attributes["job.id"], request.attributes["job.trace_id"]) == (job_id, agent_trace)
    assert request.attributes["request.id"] == "res-1"
    # The queries of both sides are in the trace.
    queries = [s for s in spans.values() if s.attributes.get("db.system") == "postgresql"]
    assert {s.service for s in queries} == {"governance-web", "governance-worker"}


@pytest.mark.process
@pytest.mark.django_db(transaction=True)
def test_an_agent_traceparent_is_joined_and_a_malformed_one_breaks_nothing(tmp_path, vlevel, receiver):
    key = issue_key(agent=vlevel)
    otel = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "100", "LOG_FORMAT": "json"}
    with gunicorn(tmp_path, workers=1, threads=2, **otel) as base:
        theirs = uuid.uuid4().hex
        joined = f"00-{theirs}-{uuid.uuid4().hex[:16]}-01"
        status, job, _ = _call(base, "POST", "/jobs", key, _envelope(theirs, "https://shop.test/a"), traceparent=joined)
        assert status == 201, job
        garbage = "00-zz-not-a-trace"
        status, other, _ = _call(
            base, "POST", "/jobs", key, _envelope(str(uuid.uuid4()), "https://shop.test/b"), traceparent=garbage
        )
        assert status == 201, other
        # A request about no job: Django logs the 404, with the request's ids.
        missing = uuid.uuid4()
        status, _, headers = _call(base, "GET", f"/jobs/{missing}", key, **{"X-Request-ID": "<script> id"})
        assert status == 404
        generated = headers["X-Request-ID"]
        assert len(generated) == 32
        assert generated.isalnum()

        def servers() -> dict[str, Span]:
            found = {s.attributes.get("job.id") or s.attributes["request.id"]: s for s in receiver.where(kind=SERVER)}
            return found if {job["jobId"], other["jobId"], generated} <= set(found) else {}

        found = wait_for(servers, timeout=30, interval=0.2)
        assert found, receiver.spans
        # The agent's trace holds the platform's span, under the agent's own.
        assert found[job["jobId"]].trace_id == theirs
        assert found[job["jobId"]].parent_id == joined.split("-")[2]
        # A malformed traceparent is ignored: a trace of the platform's own, the job's id an attribute.
        assert found[other["jobId"]].parent_id == ""
        assert found[other["jobId"]].attributes["job.trace_id"] == other["traceId"]
        # The 404's log line carries the request id the answer gave back, and the request's trace.
        text = (tmp_path / "gunicorn.log").read_text()
        (line,) = [line for line in _json_lines(text) if line.get("request_id") == generated]
        assert line["message"].startswith("Not Found")
        assert (line["trace_id"], line["span_id"]) == (found[generated].trace_id, found[generated].span_id)


PROBE = """
import json, sys, threading
import controlplane.wsgi
from django.conf import settings
from governance.kernel import tracing
print(json.dumps({
    "enabled": tracing.enabled(),
    "modules": sorted(name for name in sys.modules if name.startswith("opentelemetry")),
    "threads": [thread.name for thread in threading.enumerate()],
    "middleware": [name for name in settings.MIDDLEWARE if name.startswith("opentelemetry")],
}))
"""


def _web_process_state(tmp_path, **extra: str) -> dict[str, Any]:
    """What a web process (controlplane/wsgi.py, as gunicorn loads it) has set up."""
    env = process_env(tmp_path / "var", DATABASE_URL=database_url_of_tests(), **extra)
    if not extra:
        env = {key: value for key, value in env.items() if not key.startswith("OTEL_")}
    done = subprocess.run([PYTHON, "-c", PROBE], cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.process
@pytest.mark.django_db(transaction=True)
def test_without_an_endpoint_nothing_of_opentelemetry_is_loaded(tmp_path, receiver):
    off = _web_process_state(tmp_path)
    assert (off["enabled"], off["modules"], off["middleware"]) == (False, [], [])

    on = _web_process_state(tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url)
    assert on["enabled"]
    assert on["middleware"] == ["opentelemetry.instrumentation.django.middleware.otel_middleware._DjangoMiddleware"]
    # The exporters' threads (spans, metrics) are the only threads tracing adds.
    added = [name for name in on["threads"] if name not in off["threads"]]
    assert sorted(added) == ["OtelBatchSpanRecordProcessor", "OtelPeriodicExportingMetricReader"]


@pytest.mark.django_db
def test_a_request_id_is_given_back_and_on_the_lines_logged_for_the_request(agent_api, caplog):
    missing = f"/jobs/{uuid.uuid4()}"

    kept = agent_api.get(missing, HTTP_X_REQUEST_ID="proxy-7f3a.1")
    forged = agent_api.get(missing, HTTP_X_REQUEST_ID="x\nERROR django forged line")
    long = agent_api.get(missing, HTTP_X_REQUEST_ID="a" * 65)

    assert kept["X-Request-ID"] == "proxy-7f3a.1"
    assert forged["X-Request-ID"] != long["X-Request-ID"]
    for response in (forged, long):
        assert len(response["X-Request-ID"]) == 32
        assert response["X-Request-ID"].isalnum()
    lines = [record for record in caplog.records if record.name == "django.request"]
    assert [record.request_id for record in lines] == [r["X-Request-ID"] for r in (kept, forged, long)]
    assert logs.TextFormatter().format(lines[0]).endswith(f"Not Found: /api/v1{missing} [request=proxy-7f3a.1]")
    assert "forged" not in logs.TextFormatter().format(lines[1])


def test_inside_a_span_log_lines_get_its_ids_and_a_tasks_span_gets_the_job_it_works_for():
    """What ``setup`` wires in a process that exports (log lines carry the current span's ids; a
    task's span carries the job its sender named), exercised on a provider of the test's own."""
    from types import SimpleNamespace

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sent = {"job_id": "j-1", "job_trace_id": "t-1", "agent_id": "agent.seo.vlevel", "request_id": "r-1"}
    task = SimpleNamespace(request=SimpleNamespace(**{tracing.CONTEXT_HEADER: sent}))

    assert tracing._current_ids() is None  # outside any span, log lines carry no ids
    with provider.get_tracer("test").start_as_current_span("run/jobs.work") as span:
        ids = tracing._current_ids()
        tracing._annotate_task_span(task)

    context = span.get_span_context()
    assert ids == (f"{context.trace_id:032x}", f"{context.span_id:016x}")
    (finished,) = exporter.get_finished_spans()
    assert dict(finished.attributes or {}) == {
        "job.id": "j-1",
        "job.trace_id": "t-1",
        "agent.id": "agent.seo.vlevel",
    }  # the request id is the log's business, not the span's
