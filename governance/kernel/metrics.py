"""Prometheus metrics: the instruments every process writes, and ``/metrics`` that reads them.

prometheus-client runs in multiprocess mode: each process (gunicorn worker, Celery pool child)
writes its counters and histograms to its own files under ``METRICS_DIR`` (the settings point
``PROMETHEUS_MULTIPROC_DIR`` there before the library is imported), and a scrape adds every
process's files up, so the figures do not depend on which worker answers. A dead process's
counters stay counted; its "live" gauges (requests and tasks in progress) are dropped by
``mark_dead``, called from gunicorn's ``child_exit`` (controlplane/gunicorn_conf.py) and Celery's
``worker_process_shutdown``. The directory is emptied when the plane starts
(``reset_multiprocess_dir``), never while processes write to it.

What the tables say (jobs waiting, sessions by phase, the inbox, learnings...) is not counted
here: it is read from the database at scrape time by the sources the apps register
(``register``; controlplane/gauges.py), so it is always the database's own figure. Tables that
grow to millions of rows (tool calls, jobs that finished, contract checks) are counted when they are written
(``count_on_commit``) instead, as a query over them would make a scrape slow.

Access: from loopback without a token, when nothing forwarded the request (a local Prometheus
or `curl` on the host); from elsewhere only with ``Authorization: Bearer <METRICS_TOKEN>``.
Agents' API keys are never accepted: the figures name agents and contracts.

The module imports nothing that needs Django's apps loaded: gunicorn's master imports it for
``mark_dead`` without setting Django up.

Labels are bounded by what operators configure (agent ids, contract names, task names, route
patterns), never a job, session or path: each label value is a time series kept forever.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from celery import signals
from django.conf import settings
from django.db import DatabaseError, transaction
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import (
    CONTENT_TYPE_PLAIN_0_0_4,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.metrics_core import Metric

logger = logging.getLogger(__name__)

PREFIX = "governance_"
UNMATCHED = "<unmatched>"  # a request no URL pattern matched (404, or refused before routing)
STATIC = "<static>"

# --- Instruments written by each process ------------------------------------------------------

HTTP_REQUESTS = Counter(
    f"{PREFIX}http_requests",
    "HTTP requests answered, by route pattern, method and status class",
    ["route", "method", "status"],
)
HTTP_DURATION = Histogram(
    f"{PREFIX}http_request_duration_seconds",
    "Time to answer an HTTP request, by route pattern and method",
    ["route", "method"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
HTTP_IN_PROGRESS = Gauge(
    f"{PREFIX}http_requests_in_progress", "HTTP requests being answered", ["method"], multiprocess_mode="livesum"
)
TASK_RUNS = Counter(f"{PREFIX}celery_task_runs", "Celery task runs ended, by task and state", ["task", "state"])
TASK_DURATION = Histogram(
    f"{PREFIX}celery_task_duration_seconds",
    "Time a Celery task ran, by task",
    ["task"],
    buckets=(0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600),
)
TASKS_IN_PROGRESS = Gauge(
    f"{PREFIX}celery_tasks_in_progress", "Celery tasks running, by task", ["task"], multiprocess_mode="livesum"
)
JOBS_FINISHED = Counter(
    f"{PREFIX}jobs_finished", "Jobs that reached a final status, by agent and status", ["agent", "status"]
)
CONTRACT_CHECKS = Counter(f"{PREFIX}contract_checks", "Outputs checked against a contract", ["contract"])
CONTRACT_VIOLATIONS = Counter(
    f"{PREFIX}contract_violations", "Checked outputs that broke their contract (one or more violations)", ["contract"]
)
TOOL_CALLS = Counter(f"{PREFIX}tool_calls", "Tool calls recorded, by agent", ["agent"])
TOOL_REFUSALS = Counter(f"{PREFIX}tool_refusals", "Tool calls refused, by reason", ["reason"])
RESULT_SECRETS = Counter(
    f"{PREFIX}gateway_result_secrets",
    "Secrets found in upstream tool results, by detector and what the upstream's setting did (redact, block, log)",
    ["kind", "action"],
)
SESSION_PHASE_SECONDS = Histogram(
    f"{PREFIX}session_phase_seconds",
    "Time sessions spent in a phase before their next event, by phase (the sum is the time spent in each)",
    ["phase"],
    buckets=(0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 14400, 86400),
)


def count_on_commit(counter: Counter, *labels: str, amount: int = 1) -> None:
    """Count ``amount``, once the transaction that wrote it commits (a rolled-back write counts nothing)."""
    child = counter.labels(*labels)
    transaction.on_commit(lambda: child.inc(amount))


def observe_on_commit(histogram: Histogram, value: float, *labels: str) -> None:
    transaction.on_commit(lambda: histogram.labels(*labels).observe(value))


# --- Figures read from the database at scrape time ---------------------------------------------

Source = Callable[[], Iterable[Metric]]
_SOURCES: list[Source] = []


def register(source: Source) -> None:
    """Add a source of metric families read at each scrape (an app's AppConfig.ready registers it)."""
    if source not in _SOURCES:
        _SOURCES.append(source)


class _Database:
    """The registered sources as one collector. A database that does not answer costs the scrape
    these figures, not the process counters (and logs why)."""

    def collect(self) -> Iterable[Metric]:
        for source in _SOURCES:
            try:
                yield from list(source())
            except DatabaseError:
                logger.exception("[metrics] %s failed", getattr(source, "__name__", source))


# --- The multiprocess directory ------------------------------------------------------------------


def directory() -> Path:
    """METRICS_DIR, where the settings pointed PROMETHEUS_MULTIPROC_DIR."""
    return Path(settings.METRICS_DIR)


def reset_multiprocess_dir() -> None:
    """Empty METRICS_DIR: call once when the plane starts, before any web or Celery process does
    (files of processes from an earlier run would be added to this run's figures)."""
    folder = directory()
    folder.mkdir(parents=True, exist_ok=True)
    for path in folder.glob("*.db"):
        path.unlink(missing_ok=True)


def mark_dead(pid: int) -> None:
    """A process ended: drop its live gauges (its counters stay counted)."""
    multiprocess.mark_process_dead(pid, str(directory()))


# --- HTTP ----------------------------------------------------------------------------------------


def route_of(request: HttpRequest) -> str:
    """The URL pattern that answered, never the path (a path per job would be a series per job)."""
    match = getattr(request, "resolver_match", None)
    if match is not None:
        return match.route or match.view_name or UNMATCHED
    if request.path_info.startswith("/" + settings.STATIC_URL.lstrip("/")):
        return STATIC
    return UNMATCHED


class MetricsMiddleware:
    """Counts and times every request; first in MIDDLEWARE, so refusals of the other middleware
    (413, 429...) are counted too."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        method = request.method if request.method in KNOWN_METHODS else "other"
        in_progress = HTTP_IN_PROGRESS.labels(method)
        in_progress.inc()
        started = time.perf_counter()
        try:
            response = self.get_response(request)
        finally:
            in_progress.dec()
        route = route_of(request)
        HTTP_DURATION.labels(route, method).observe(time.perf_counter() - started)
        HTTP_REQUESTS.labels(route, method, f"{response.status_code // 100}xx").inc()
        return response


KNOWN_METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}


# --- Celery --------------------------------------------------------------------------------------

_task_started: dict[str, float] = {}


def _task_prerun(task_id: str, task: Any, **_: Any) -> None:
    _task_started[task_id] = time.perf_counter()
    TASKS_IN_PROGRESS.labels(task.name).inc()


def _task_postrun(task_id: str, task: Any, state: str = "", **_: Any) -> None:
    started = _task_started.pop(task_id, None)
    TASKS_IN_PROGRESS.labels(task.name).dec()
    TASK_RUNS.labels(task.name, (state or "unknown").lower()).inc()
    if started is not None:
        TASK_DURATION.labels(task.name).observe(time.perf_counter() - started)


def _process_shutdown(**_: Any) -> None:
    mark_dead(os.getpid())


def connect() -> None:
    signals.task_prerun.connect(_task_prerun, weak=False, dispatch_uid="governance.kernel.metrics.prerun")
    signals.task_postrun.connect(_task_postrun, weak=False, dispatch_uid="governance.kernel.metrics.postrun")
    signals.worker_process_shutdown.connect(
        _process_shutdown, weak=False, dispatch_uid="governance.kernel.metrics.shutdown"
    )


# --- GET /metrics --------------------------------------------------------------------------------

FORWARDING_HEADERS = ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP")


def from_loopback(meta: Mapping[str, Any]) -> bool:
    """Sent from this host, by nothing that forwards: a reverse proxy on this host connects from
    loopback too, and what it forwards comes from anywhere (it says so in X-Forwarded-For).
    ``meta`` is a request's META, or the WSGI environ it is made from."""
    if any(meta.get(header) for header in FORWARDING_HEADERS):
        return False
    try:
        return ipaddress.ip_address(meta.get("REMOTE_ADDR", "")).is_loopback
    except ValueError:
        return False


def refusal(meta: Mapping[str, Any]) -> int | None:
    """None when the caller may read; else the status of the refusal (401 without a credential,
    403 with a wrong one), which says nothing about the figures."""
    presented = meta.get("HTTP_AUTHORIZATION", "")
    if not presented:
        return None if from_loopback(meta) else 401
    scheme, _, token = presented.partition(" ")
    expected = settings.METRICS_TOKEN
    if expected and scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), expected.encode()):
        return None
    return 403


REFUSALS = {401: "Unauthorized\n", 403: "Forbidden\n"}


def _process_figures() -> CollectorRegistry:
    """What this host's processes wrote under METRICS_DIR."""
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=str(directory()))
    return registry


@require_GET
def view(request: HttpRequest) -> HttpResponse:
    status = refusal(request.META)
    if status is not None:
        from governance.kernel.web_security import client_ip  # loads axes: not in gunicorn's master

        logger.warning("[metrics] refused %s from %s", status, client_ip(request))
        refused = HttpResponse(REFUSALS[status], status=status, content_type="text/plain")
        if status == 401:
            refused["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return refused
    registry = _process_figures()
    registry.register(_Database())
    # The 0.0.4 text format every Prometheus reads (our names need none of 1.0.0's escaping).
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_PLAIN_0_0_4)


def process_figures_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    """The same figures for a host without a web server (worker or beat roles only), served by
    `serve` on METRICS_PORT under the same access rule: the processes' own counters, not the
    database's figures, which a web host already serves (twice would double them in sums)."""
    status = refusal(environ) if environ.get("PATH_INFO") == "/metrics" else 404
    if environ.get("REQUEST_METHOD") != "GET" and status is None:
        status = 405
    if status is not None:
        headers = [("Content-Type", "text/plain")]
        if status == 401:
            headers.append(("WWW-Authenticate", 'Bearer realm="metrics"'))
        logger.warning("[metrics] refused %s from %s", status, environ.get("REMOTE_ADDR"))
        start_response(f"{status} {REFUSALS.get(status, 'Refused').strip()}", headers)
        return [REFUSALS.get(status, "Refused\n").encode()]
    start_response("200 OK", [("Content-Type", CONTENT_TYPE_PLAIN_0_0_4)])
    return [generate_latest(_process_figures())]


def serve_process_figures(host: str, port: int) -> Any:
    """Serve `process_figures_app` on a daemon thread of the calling process; returns the server
    (``shutdown()`` stops it)."""
    import threading
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    class QuietHandler(WSGIRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # access lines would flood the log
            pass

    server = make_server(host, port, process_figures_app, handler_class=QuietHandler)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server
