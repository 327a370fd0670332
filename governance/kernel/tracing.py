"""OpenTelemetry traces: one trace from the HTTP request through the Celery tasks it queued.

Off unless ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set: then nothing of OpenTelemetry is even imported,
and no instrumentation is installed. When on, ``setup`` installs a tracer provider exporting over
OTLP/HTTP in batches, and the Django, psycopg and Celery instrumentations; the standard
``OTEL_*`` variables keep their meaning (service name, resource attributes, exporter headers,
sampler, batch delays, the Django instrumentation's excluded URLs). A meter provider exports the
OpenTelemetry metrics (the MCP operation durations of gateway/telemetry.py) to the same endpoint,
every ``OTEL_METRIC_EXPORT_INTERVAL`` milliseconds (a minute unless set); the rest of the
platform's figures are Prometheus's (governance/kernel/metrics.py).

``setup`` must run after the fork, in the process that serves or works: the exporter's thread
does not survive a fork. gunicorn loads the application in each worker (no preload), so the WSGI
and ASGI modules call it; Celery calls it in each prefork child (``worker_process_init``), in the
worker itself for the pools that do not fork, and in beat (controlplane/celery.py).

A job's ``traceId`` (seed 001) is the agent's, not W3C's: it stays an attribute (``job.trace_id``)
of the spans of the requests about the job and of the tasks they queue. The request span is begun
before the body is read, so it cannot take its trace id from the envelope; an agent that wants its
own trace to hold ours sends a W3C ``traceparent`` header, which the Django instrumentation joins
(a malformed one is ignored: the request starts a trace of its own). An agent that uses its trace
id (32 hex digits) as the envelope's ``traceId`` finds both under one id; an MCP tool call that
names its job links to the trace of that id (gateway/telemetry.py).

What crosses from a request to its tasks besides the trace context (the request id, the job) goes
in one Celery message header, ``governance_context``, whether tracing is on or not: the worker's
log lines carry the request id that queued their task.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from celery import signals

from governance.kernel import logs

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import TracerProvider

logger = logging.getLogger(__name__)

# The Celery message header carrying ``logs.context`` to the task.
CONTEXT_HEADER = "governance_context"
# Log-context keys that become span attributes (the rest, the request id, is the log's business).
SPAN_ATTRIBUTES = {"job_id": "job.id", "job_trace_id": "job.trace_id", "agent_id": "agent.id"}
# Health probes every few seconds would bury the traces worth reading.
DEFAULT_EXCLUDED_URLS = "api/v1/health,static/"

_provider: TracerProvider | None = None
_meter_provider: MeterProvider | None = None


def enabled() -> bool:
    """Whether this process exports traces (``setup`` found an endpoint)."""
    return _provider is not None


def _wanted() -> bool:
    from django.conf import settings

    return bool(settings.OTEL_EXPORTER_OTLP_ENDPOINT) and os.environ.get("OTEL_SDK_DISABLED", "").lower() != "true"


def _named_by_environment() -> bool:
    """An operator's OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES) wins over
    the name ``setup`` is given."""
    attributes = os.environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
    return bool(os.environ.get("OTEL_SERVICE_NAME")) or any(
        item.split("=", 1)[0].strip() == "service.name" for item in attributes.split(",")
    )


def setup(service_name: str) -> bool:
    """Export this process's spans as ``service_name`` (governance-web, governance-worker,
    governance-beat) and instrument Django, psycopg and Celery; once per process, and only when
    an endpoint is configured. True when tracing is on."""
    global _provider, _meter_provider
    if _provider is not None or not _wanted():
        return _provider is not None
    from opentelemetry import metrics, trace
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({} if _named_by_environment() else {SERVICE_NAME: service_name})
    # shutdown_on_exit: the provider flushes what is still batched when the process exits.
    provider = TracerProvider(resource=resource, shutdown_on_exit=True)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    _provider = provider
    _meter_provider = MeterProvider(
        metric_readers=[PeriodicExportingMetricReader(OTLPMetricExporter())], resource=resource, shutdown_on_exit=True
    )
    metrics.set_meter_provider(_meter_provider)
    excluded = os.environ.get("OTEL_PYTHON_DJANGO_EXCLUDED_URLS", DEFAULT_EXCLUDED_URLS)
    DjangoInstrumentor().instrument(tracer_provider=provider, excluded_urls=excluded)
    # No SQL comments: statements stay as Django wrote them (and as pg_stat_statements groups them).
    PsycopgInstrumentor().instrument(tracer_provider=provider, enable_commenter=False)
    CeleryInstrumentor().instrument(tracer_provider=provider)
    # After the instrumentation's own prerun receiver, so the task's span is the current one.
    signals.task_prerun.connect(_annotate_task_span, weak=False, dispatch_uid="governance.tracing.task_span")
    logs.use_trace_ids(_current_ids)
    logger.info("[tracing] exporting spans of %s over OTLP/HTTP", service_name)
    return True


def shutdown() -> None:
    """Export what is still batched; Celery's prefork children leave with ``os._exit``, which
    runs no exit handler, so the worker calls this on ``worker_process_shutdown``."""
    if _provider is not None:
        _provider.shutdown()
    if _meter_provider is not None:
        _meter_provider.shutdown()


def _annotate_current_span(values: dict[str, str]) -> None:
    from opentelemetry import trace

    span = trace.get_current_span()
    for key, attribute in SPAN_ATTRIBUTES.items():
        if key in values:
            span.set_attribute(attribute, values[key])


def _current_ids() -> tuple[str, str] | None:
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return trace.format_trace_id(context.trace_id), trace.format_span_id(context.span_id)


def annotate_request(request_id: str) -> None:
    """The request span carries the request id its answer gives back (X-Request-ID)."""
    if _provider is not None:
        from opentelemetry import trace

        trace.get_current_span().set_attribute("request.id", request_id)


def annotate_job(*, job_id: object, trace_id: object, agent_id: str) -> None:
    """The request (or task) is about this job: its spans, its log lines and the tasks it queues
    from here on carry the job, its trace id and its agent."""
    values = {"job_id": str(job_id), "job_trace_id": str(trace_id), "agent_id": agent_id}
    logs.bind(**values)
    if _provider is not None:
        _annotate_current_span(values)


# --- Celery: what crosses from the sender to the task ---------------------------------------------


def _before_publish(headers: dict[str, Any] | None = None, **_: Any) -> None:
    values = logs.context.get()
    if headers is not None and values:
        headers[CONTEXT_HEADER] = dict(values)


def _sent_context(task: Any) -> dict[str, str]:
    sent = getattr(task.request, CONTEXT_HEADER, None)
    if not isinstance(sent, dict):
        return {}
    return {key: str(value) for key, value in sent.items() if key in logs.CARRIED}


def _task_started(task_id: str, task: Any, **_: Any) -> None:
    """The task's log lines carry its id and the sender's context (its request, its job)."""
    logs.context.set({**_sent_context(task), "task_id": task_id})


def _annotate_task_span(task: Any, **_: Any) -> None:
    """The task's span (the instrumentation's ``run/<name>``) carries the job it works for."""
    _annotate_current_span(_sent_context(task))


def _task_finished(**_: Any) -> None:
    logs.context.set({})


def connect_celery() -> None:
    """Carry the log context from the sender to the task (controlplane/celery.py calls it)."""
    signals.before_task_publish.connect(_before_publish, weak=False, dispatch_uid="governance.tracing.publish")
    signals.task_prerun.connect(_task_started, weak=False, dispatch_uid="governance.tracing.started")
    signals.task_postrun.connect(_task_finished, weak=False, dispatch_uid="governance.tracing.finished")
