"""The MCP endpoint's cost: ``tools/call submit_job`` on ``/mcp`` vs its REST twin ``POST /api/v1/jobs``.

One gunicorn (as ``bench/jobs.py`` serves it) answers, in turn, for ``duration`` seconds each
after a warm-up, at 1 client and then at ``clients`` clients:

* ``rest``: a few envelopes sent again and again to ``POST /api/v1/jobs`` (idempotent replays);
* ``mcp``: the same envelopes as ``tools/call submit_job`` JSON-RPC requests on ``/mcp``
  (stateless Streamable HTTP: every request stands alone, as a load balancer may spread them);
* ``list``: ``tools/list`` on ``/mcp``.

Both paths run the same service, so the difference is what MCP adds: the SDK's transport and
session manager per request, the JSON-RPC envelope, the event loop of the async view. The answers
are checked once before the clock (a replay, not an error); under load only the status counts.

Run: ``python -m bench mcp --duration 20 --clients 8``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from bench.common import SETTINGS, div, machine, package_version, publish, warmup_seconds
from bench.jobs import (
    WORKERS,
    Request,
    cycling,
    expect_replay,
    expect_status,
    free_port,
    phase,
    prepare_jobs_database,
    seed_replays,
    start_server,
    stop_embedded_db_if_ours,
    stop_server,
    wait_healthy,
)

PROTOCOL = "2025-11-25"
# Targets (issue 14 sets them for the gateway; here for the endpoint it stands on): printed, never a failure.
P95_OVERHEAD_MS = 5.0
RPS_VS_REST = 0.5


def mcp_request(key: str, method: str, params: dict[str, Any]) -> Request:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    headers = {
        "Authorization": f"Bearer {key}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL,
    }
    return Request("POST", "/mcp", json.dumps(body).encode(), headers)


def as_tool_call(key: str, rest: Request) -> Request:
    return mcp_request(key, "tools/call", {"name": "submit_job", "arguments": json.loads(rest.body or b"{}")})


def answer(port: int, request: Request) -> dict[str, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(request.method, request.path, request.body, request.headers)
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    if response.status != 200:
        raise RuntimeError(f"{request.path} answered {response.status}: {body[:500]!r}")
    return json.loads(body)


def check_outside_the_clock(port: int, call: Request, listing: Request) -> None:
    """The measured requests do what they say: a replayed job, and the tool list."""
    result = answer(port, call)["result"]
    if result.get("isError") or result["structuredContent"]["created"] is not False:
        raise RuntimeError(f"tools/call submit_job did not replay: {json.dumps(result)[:500]}")
    tools = {tool["name"] for tool in answer(port, listing)["result"]["tools"]}
    if "submit_job" not in tools:
        raise RuntimeError(f"tools/list lacks submit_job: {sorted(tools)}")


def measure(port: int, key: str, clients: int, duration: float) -> dict[str, dict]:
    replays = seed_replays(port, key, uuid.uuid4().hex[:12])
    calls = [as_tool_call(key, request) for request in replays]
    listing = mcp_request(key, "tools/list", {})
    check_outside_the_clock(port, calls[0], listing)
    results: dict[str, dict] = {}
    for n in sorted({1, clients}):
        print(f"{n} client(s): REST replays, MCP tools/call, MCP tools/list, {duration:g} s each ...", flush=True)
        results[f"rest@{n}"] = phase(port, cycling(replays), expect_replay, n, duration)
        results[f"mcp@{n}"] = phase(port, cycling(calls), expect_status(200), n, duration)
        results[f"list@{n}"] = phase(port, cycling([listing]), expect_status(200), n, duration)
    return results


def ratios(phases: dict[str, dict], counts: list[int]) -> dict[str, float]:
    out: dict[str, float] = {}
    for n in counts:
        rest, mcp = phases[f"rest@{n}"], phases[f"mcp@{n}"]
        out[f"mcp_rps_vs_rest@{n}"] = div(mcp["rps"], rest["rps"])
        out[f"mcp_p50_overhead_ms@{n}"] = round(mcp["p50_ms"] - rest["p50_ms"], 2)
        out[f"mcp_p95_overhead_ms@{n}"] = round(mcp["p95_ms"] - rest["p95_ms"], 2)
    return out


def targets(ratio: dict[str, float], counts: list[int]) -> dict[str, bool]:
    out = {}
    for n in counts:
        out[f"p95 overhead < {P95_OVERHEAD_MS:g} ms at {n} client(s)"] = (
            ratio[f"mcp_p95_overhead_ms@{n}"] < P95_OVERHEAD_MS
        )
        out[f"throughput >= {RPS_VS_REST:.0%} of REST at {n} client(s)"] = ratio[f"mcp_rps_vs_rest@{n}"] >= RPS_VS_REST
    return out


def report(result: dict[str, Any]) -> str:
    lines = [f"{'phase':<10}{'requests':>10}{'errors':>8}{'req/s':>9}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}"]
    for name, p in result["phases"].items():
        lines.append(
            f"{name:<10}{p['requests']:>10}{p['errors']:>8}{p['rps']:>9.1f}"
            f"{p['p50_ms']:>9.2f}{p['p95_ms']:>9.2f}{p['p99_ms']:>9.2f}"
        )
    lines.append("")
    lines += [f"{name:<28}{value:.3f}" for name, value in result["ratios"].items()]
    for name, p in result["phases"].items():
        lines += [f"error sample ({name}): {json.dumps(sample)[:600]}" for sample in p["error_samples"]]
    lines.append("")
    return "\n".join(lines)


def run(duration: float = 20, clients: int = 8) -> dict:
    load_before = os.getloadavg()
    key, database = prepare_jobs_database()
    port = free_port()
    log = Path(tempfile.gettempdir()) / f"bench-mcp-gunicorn-{port}.log"
    server = start_server(port, log)
    try:
        wait_healthy(server, port, log)
        print(f"gunicorn ({WORKERS} workers) on 127.0.0.1:{port}, log {log}", flush=True)
        phases = measure(port, key, clients, duration)
    finally:
        stop_server(server)
        stop_embedded_db_if_ours()
    counts = sorted({1, clients})
    ratio = ratios(phases, counts)
    result = {
        "benchmark": "mcp",
        "config": {"duration_s": duration, "warmup_s": warmup_seconds(duration), "clients": counts},
        "config_server": {"workers": WORKERS, "worker_class": "sync", "settings": SETTINGS},
        "machine": machine(database, load_before, gunicorn=package_version("gunicorn"), mcp=package_version("mcp")),
        "phases": phases,
        "ratios": ratio,
        "targets": targets(ratio, counts),
    }
    return publish("mcp", result, report(result))


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench mcp", description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=20, help="seconds per phase (default 20)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients of the loaded phases (default 8)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        run(duration=args.duration, clients=args.clients)
    except KeyboardInterrupt:
        print("interrupted; server stopped", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
