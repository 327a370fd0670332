"""Job submission (``POST /api/v1/jobs``) through the real HTTP stack vs a bare Django view.

One gunicorn (the same command ``make run`` uses, ``bench.settings`` so ``/bench/bare`` exists)
serves its phases in turn, each driven by ``clients`` keep-alive threads for ``duration``
seconds after a short unrecorded warm-up:

* ``bare``: ``GET /bench/bare``, the floor set by gunicorn + Django middleware;
* ``raw_create``: ``POST /bench/raw/jobs``, the same envelopes written as the rows a create
  writes (claim, job, audit row) with raw SQL in one transaction, no auth (``bench/views.py``):
  the floor of a create that writes what ours writes;
* ``create``: a new JobEnvelope every request (201 expected);
* ``raw_replay``: ``POST /bench/raw/jobs/replay``, a few envelopes' jobs read back through their
  claim with raw SQL and answered as JSON, the floor of a replay;
* ``replay``: a few envelopes sent again and again (200 + ``Idempotent-Replayed: true``);
* ``block``: ``POST /api/v1/memory/injection-block`` for a job's story, domain and query, the
  step-0 block alone (query embedding with the configured model included);
* ``lease``: ``POST /api/v1/jobs/lease``, the agent's next queued job (the ``create`` phase queued
  thousands): its first lease builds that same block and keeps it as the job's ragContext, so
  ``lease`` against ``block`` is what a lease adds to the block it cannot avoid.

Only answers with the expected status count towards req/s and latency; the others are counted
as errors, with a few samples kept for the report. The server writes to its own database,
``governance_bench`` on the embedded PostgreSQL, or to ``DATABASE_URL`` when that is set.

Run: ``python -m bench jobs --duration 30 --clients 8`` (or ``make bench BENCH_ARGS=...``).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import functools
import http.client
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import (
    BASE_DIR,
    MANIFEST,
    SETTINGS,
    div,
    machine,
    package_version,
    percentile,
    prepare_database,
    publish,
    run_threads,
    until_interrupted,
    warmup_seconds,
)

DB_NAME = "governance_bench"
WORKERS = 2
REPLAY_BODIES = 8
HEALTH_TIMEOUT = 90.0
STOP_TIMEOUT = 15.0
ERROR_SAMPLES = 5
MODEL_WARMUP_SECONDS = 20.0

# Targets from the issue; printed as met / missed, never a failure.
CREATE_P95_MS = 50.0
CREATE_VS_BARE = 0.5
VS_RAW = 0.5  # create and replay against their raw-SQL floor (issue 18.4)

_PR_SET_PDEATHSIG = 1


# --- Requests and their checks ------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)


Check = Callable[[http.client.HTTPResponse], bool]


def expect_status(status: int) -> Check:
    return lambda response: response.status == status


def expect_replay(response: http.client.HTTPResponse) -> bool:
    """A replay is only a replay when the server says so; a 200 without the header is a bug."""
    return response.status == 200 and response.getheader("Idempotent-Replayed") == "true"


def envelope(url: str) -> dict[str, Any]:
    """The smallest envelope the vlevel manifest admits (its pre-condition wants 1..1000 urls)."""
    return {
        "intent": "seo_audit",
        "scope": {"entityType": "page"},
        "payload": {"urls": [url]},
        "context": {"source": "cron"},
    }


def job_request(key: str, url: str) -> Request:
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    return Request("POST", "/api/v1/jobs", json.dumps(envelope(url)).encode(), headers)


def raw_request(path: str, url: str) -> Request:
    """The same body as ``job_request``, to a raw-SQL baseline view (no key)."""
    return Request("POST", path, json.dumps(envelope(url)).encode(), {"Content-Type": "application/json"})


def unique_jobs(make: Callable[[str], Request], run_id: str) -> Callable[[], Request]:
    """A new idempotency key per request; the run id keeps a second run from replaying the first."""
    counter = itertools.count()
    lock = threading.Lock()

    def next_request() -> Request:
        with lock:
            n = next(counter)
        return make(f"https://example.com/{run_id}/{n}")

    return next_request


def block_request(key: str) -> Request:
    """The block a lease of a bench job builds: its story is the job's id (a new one each time),
    the vlevel agent's domain, the page scope as project, and a query like a job's."""
    story = str(uuid.uuid4())
    query = f'seo_audit {{"urls": ["https://example.com/block/{story}"]}}'
    body = json.dumps({"story": story, "domain": "seo", "project": "page", "query_text": query}).encode()
    return Request(
        "POST",
        "/api/v1/memory/injection-block",
        body,
        {"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )


def cycling(requests: list[Request]) -> Callable[[], Request]:
    """The same few requests in turn, so every one after the first is a replay."""
    pool: Iterator[Request] = itertools.cycle(requests)
    lock = threading.Lock()

    def next_request() -> Request:
        with lock:
            return next(pool)

    return next_request


# --- Load generation ----------------------------------------------------------------------------


@dataclass
class Tally:
    """What the client threads of one phase saw; appends are thread-safe under the GIL."""

    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    samples: list[dict[str, Any]] = field(default_factory=list)

    def error(self, sample: dict[str, Any]) -> None:
        self.errors += 1
        if len(self.samples) < ERROR_SAMPLES:
            self.samples.append(sample)


def _client(port: int, next_request: Callable[[], Request], check: Check, deadline: float, tally: Tally) -> None:
    """One keep-alive connection; http.client reconnects by itself when the server closes it."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        while time.perf_counter() < deadline:
            request = next_request()
            started = time.perf_counter()
            try:
                conn.request(request.method, request.path, request.body, request.headers)
                response = conn.getresponse()
                body = response.read()
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                tally.error({"exception": repr(exc)})
                continue
            elapsed = time.perf_counter() - started
            if check(response):
                tally.latencies.append(elapsed)
            else:
                tally.error({"status": response.status, "headers": dict(response.getheaders()), "body": body[:500]})
    finally:
        conn.close()


def drive(port: int, next_request: Callable[[], Request], check: Check, clients: int, seconds: float) -> dict:
    """Run ``clients`` threads for ``seconds``; the clock stops when the last answer is in."""
    tally = Tally()
    started = time.perf_counter()
    deadline = started + seconds
    threads = [
        threading.Thread(target=_client, args=(port, next_request, check, deadline, tally), daemon=True)
        for _ in range(clients)
    ]
    run_threads(threads)
    return summarise(tally, time.perf_counter() - started)


def summarise(tally: Tally, seconds: float) -> dict[str, Any]:
    ordered = sorted(tally.latencies)
    ms = [round(percentile(ordered, p) * 1000, 2) for p in (50, 95, 99)]
    return {
        "requests": len(ordered) + tally.errors,
        "errors": tally.errors,
        "seconds": round(seconds, 2),
        "rps": round(len(ordered) / seconds, 1) if seconds else 0.0,
        "p50_ms": ms[0],
        "p95_ms": ms[1],
        "p99_ms": ms[2],
        "error_samples": [_printable(s) for s in tally.samples],
    }


def _printable(sample: dict[str, Any]) -> dict[str, Any]:
    body = sample.get("body")
    return {**sample, "body": body.decode("utf-8", "replace")} if isinstance(body, bytes) else sample


def phase(port: int, next_request: Callable[[], Request], check: Check, clients: int, duration: float) -> dict:
    """A warm-up (connections, lazy imports, plan caches) that is thrown away, then the measure."""
    drive(port, next_request, check, clients, warmup_seconds(duration))
    return drive(port, next_request, check, clients, duration)


# --- Database and server ------------------------------------------------------------------------


def prepare_jobs_database() -> tuple[str, str]:
    """Migrate, load the vlevel manifest and issue an agent key, in this process, before the
    server starts. Returns (plain key, where the database is). A second run reuses the manifest
    (loading the same version is a no-op) and only adds a key."""
    where = prepare_database(DB_NAME)
    from django.db import connection

    from agents.registry import load_manifest
    from governance.kernel.principals import SYSTEM
    from governance.kernel.services import issue_api_key

    row, _ = load_manifest(MANIFEST.read_text(encoding="utf-8"), actor=SYSTEM)
    _, key = issue_api_key(actor=SYSTEM, name="bench", agent=row.agent)
    connection.close()
    return key, where


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _die_with_parent() -> None:
    """In the child: get SIGTERM if the benchmark is killed outright (Linux), so no orphan stays."""
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def start_server(port: int, log: Path, db_name: str = DB_NAME) -> subprocess.Popen:
    """gunicorn as ``make run`` starts it, minus the access log (it would time our disk), on
    ``db_name`` of the embedded PostgreSQL (other benchmarks serve their own database)."""
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "controlplane.wsgi",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(WORKERS),
        "--graceful-timeout",
        "10",
        "--no-control-socket",
    ]
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": SETTINGS, "EMBEDDED_DB_NAME": db_name, "PYTHONUNBUFFERED": "1"}
    with log.open("wb") as out:
        # Own session: a terminal Ctrl-C reaches only us, and we stop the server ourselves.
        return subprocess.Popen(
            command,
            cwd=BASE_DIR,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )


def wait_healthy(server: subprocess.Popen, port: int, log: Path) -> None:
    """Block until /api/v1/health answers 200; fail with the server's log if it never does."""
    deadline = time.monotonic() + HEALTH_TIMEOUT
    while time.monotonic() < deadline and server.poll() is None:
        url = f"http://127.0.0.1:{port}/api/v1/health"
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=5) as response:
            if response.status == 200:
                return
        time.sleep(0.3)
    tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
    raise RuntimeError(f"gunicorn did not become healthy (exit code {server.poll()}); log {log}:\n{tail}")


def stop_server(server: subprocess.Popen) -> None:
    """SIGTERM (gunicorn's graceful stop), then SIGKILL to the group if it hangs."""
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


def stop_embedded_db_if_ours() -> None:
    """Like ``make run``: stop the embedded PostgreSQL only when this process started it."""
    from governance.kernel import runtime

    runtime.release()


# --- The benchmark ------------------------------------------------------------------------------


def seed_replays(port: int, key: str, run_id: str) -> list[Request]:
    """Create the replayed jobs once, outside the clock; any answer but 201 stops the run."""
    return seed(port, functools.partial(job_request, key), run_id)


def seed(port: int, make: Callable[[str], Request], run_id: str) -> list[Request]:
    """``REPLAY_BODIES`` requests of ``make`` sent once each (201 expected), to be sent again."""
    requests = [make(f"https://example.com/{run_id}/replay/{n}") for n in range(REPLAY_BODIES)]
    for request in requests:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            conn.request(request.method, request.path, request.body, request.headers)
            response = conn.getresponse()
            body = response.read()
        finally:
            conn.close()
        if response.status != 201:
            raise RuntimeError(f"seeding a replay job answered {response.status}: {body[:500]!r}")
    return requests


def measure(port: int, key: str, clients: int, duration: float) -> dict[str, dict]:
    run_id = uuid.uuid4().hex[:12]
    results: dict[str, dict] = {}
    print(f"bare:   GET /bench/bare for {duration:g} s ...", flush=True)
    results["bare"] = phase(port, cycling([Request("GET", "/bench/bare")]), expect_status(200), clients, duration)
    raw_create = functools.partial(raw_request, "/bench/raw/jobs")
    print(f"raw_create: POST /bench/raw/jobs (the rows of a create, raw SQL) for {duration:g} s ...", flush=True)
    results["raw_create"] = phase(port, unique_jobs(raw_create, f"{run_id}-raw"), expect_status(201), clients, duration)
    print(f"create: POST /api/v1/jobs (new envelope each time) for {duration:g} s ...", flush=True)
    api_create = functools.partial(job_request, key)
    results["create"] = phase(port, unique_jobs(api_create, run_id), expect_status(201), clients, duration)
    print(f"raw_replay: POST /bench/raw/jobs/replay ({REPLAY_BODIES} jobs) for {duration:g} s ...", flush=True)
    raw_seeded = seed(port, raw_create, f"{run_id}-raw")
    raw_replays = [Request("POST", "/bench/raw/jobs/replay", r.body, r.headers) for r in raw_seeded]
    results["raw_replay"] = phase(port, cycling(raw_replays), expect_replay, clients, duration)
    print(f"replay: POST /api/v1/jobs ({REPLAY_BODIES} envelopes sent again) for {duration:g} s ...", flush=True)
    replays = seed_replays(port, key, run_id)
    results["replay"] = phase(port, cycling(replays), expect_replay, clients, duration)
    print(f"block:  POST /api/v1/memory/injection-block for {duration:g} s ...", flush=True)
    # Each worker loads the embedding model on its first block (seconds, not milliseconds): that
    # happens here, outside the clock, not in the phase's own short warm-up.
    drive(port, lambda: block_request(key), expect_status(200), clients, MODEL_WARMUP_SECONDS)
    results["block"] = phase(port, lambda: block_request(key), expect_status(200), clients, duration)
    print(f"lease:  POST /api/v1/jobs/lease (the next queued job, ragContext built) for {duration:g} s ...", flush=True)
    lease = Request(
        "POST", "/api/v1/jobs/lease", b"{}", {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    )
    results["lease"] = phase(port, cycling([lease]), expect_status(200), clients, duration)
    return results


def ratios(phases: dict[str, dict]) -> dict[str, float]:
    bare, create, replay = phases["bare"], phases["create"], phases["replay"]
    return {
        "create_rps_vs_bare": div(create["rps"], bare["rps"]),
        "replay_rps_vs_bare": div(replay["rps"], bare["rps"]),
        "create_rps_vs_raw_create": div(create["rps"], phases["raw_create"]["rps"]),
        "replay_rps_vs_raw_replay": div(replay["rps"], phases["raw_replay"]["rps"]),
        "replay_p95_vs_create_p95": div(replay["p95_ms"], create["p95_ms"]),
        "lease_rps_vs_block": div(phases["lease"]["rps"], phases["block"]["rps"]),
        "lease_p95_minus_block_p95_ms": phases["lease"]["p95_ms"] - phases["block"]["p95_ms"],
    }


def targets(phases: dict[str, dict], ratio: dict[str, float]) -> dict[str, bool]:
    create, replay = phases["create"], phases["replay"]
    raw_create, raw_replay = phases["raw_create"]["rps"], phases["raw_replay"]["rps"]
    return {
        f"create p95 < {CREATE_P95_MS:g} ms": create["p95_ms"] < CREATE_P95_MS,
        f"create throughput >= {CREATE_VS_BARE:.0%} of bare": ratio["create_rps_vs_bare"] >= CREATE_VS_BARE,
        f"create >= {VS_RAW:.0%} of raw-SQL baseline ({create['rps']:.0f} vs {raw_create:.0f} req/s, "
        f"{ratio['create_rps_vs_raw_create']:.0%})": ratio["create_rps_vs_raw_create"] >= VS_RAW,
        f"replay >= {VS_RAW:.0%} of raw-SQL baseline ({replay['rps']:.0f} vs {raw_replay:.0f} req/s, "
        f"{ratio['replay_rps_vs_raw_replay']:.0%})": ratio["replay_rps_vs_raw_replay"] >= VS_RAW,
        "replay at least as fast as create (req/s and p95)": replay["rps"] >= create["rps"]
        and replay["p95_ms"] <= create["p95_ms"],
    }


def report(result: dict[str, Any]) -> str:
    lines = [f"{'phase':<12}{'requests':>10}{'errors':>8}{'req/s':>9}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}"]
    for name, p in result["phases"].items():
        lines.append(
            f"{name:<12}{p['requests']:>10}{p['errors']:>8}{p['rps']:>9.1f}"
            f"{p['p50_ms']:>9.2f}{p['p95_ms']:>9.2f}{p['p99_ms']:>9.2f}"
        )
    lines.append("")
    lines += [f"{name:<30}{value:.3f}" for name, value in result["ratios"].items()]
    box = result["machine"]
    lines.append(f"load average before/after: {box['loadavg_before'][0]} / {box['loadavg_after'][0]}")
    for name, p in result["phases"].items():
        for sample in p["error_samples"]:
            lines.append(f"error sample ({name}): {json.dumps(sample)[:600]}")
    lines.append("")
    return "\n".join(lines)


def run(duration: float = 30, clients: int = 8) -> dict:
    """Prepare the database, serve it with gunicorn, measure the phases, write the JSON."""
    load_before = os.getloadavg()
    key, database = prepare_jobs_database()
    port = free_port()
    log = Path(tempfile.gettempdir()) / f"bench-jobs-gunicorn-{port}.log"
    server = start_server(port, log)
    try:
        wait_healthy(server, port, log)
        print(f"gunicorn ({WORKERS} workers) on 127.0.0.1:{port}, {clients} clients, log {log}", flush=True)
        phases = measure(port, key, clients, duration)
    finally:
        stop_server(server)
        stop_embedded_db_if_ours()
    ratio = ratios(phases)
    result = {
        "benchmark": "jobs",
        "config": {"duration_s": duration, "warmup_s": warmup_seconds(duration), "clients": clients},
        "config_server": {"workers": WORKERS, "worker_class": "sync", "settings": SETTINGS},
        "machine": machine(database, load_before, gunicorn=package_version("gunicorn")),
        "phases": phases,
        "ratios": ratio,
        "targets": targets(phases, ratio),
    }
    return publish("jobs", result, report(result))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench jobs", description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=30, help="seconds per phase (default 30)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent client threads (default 8)")
    args = parser.parse_args(argv)
    return until_interrupted(lambda: run(duration=args.duration, clients=args.clients))


if __name__ == "__main__":
    sys.exit(main())
