"""The MCP endpoint's cost (vs its REST twin) and the gateway's (vs calling the upstream directly).

One gunicorn (as ``bench/jobs.py`` serves it) answers, in turn, for ``duration`` seconds each
after a warm-up, at 1 client and then at ``clients`` clients:

* ``rest``: a few envelopes sent again and again to ``POST /api/v1/jobs`` (idempotent replays);
* ``mcp``: the same envelopes as ``tools/call submit_job`` JSON-RPC requests on ``/mcp``
  (stateless Streamable HTTP: every request stands alone, as a load balancer may spread them);
* ``list``: ``tools/list`` on ``/mcp``.

Both paths run the same service, so the difference is what MCP adds: the SDK's transport and
session manager per request, the JSON-RPC envelope, the event loop of the async view. The answers
are checked once before the clock (a replay, not an error); under load only the status counts.

Then the gateway, against an upstream MCP server of ``UPSTREAM_TOOLS`` tools run in its own process
(``bench/mcp_upstream.py``):

* ``direct``: ``tools/call execute_sql`` sent straight to the upstream;
* ``gateway``: ``tools/call mcp__supabase__execute_sql`` on ``/mcp``: the manifest grant, the rate
  limit (set high enough not to refuse), the recorded call, the forward on the process's
  upstream session, then the call log row;
* ``gwlist``: ``tools/list`` on ``/mcp`` for that agent (the upstream's list is cached).

Run: ``python -m bench mcp --duration 20 --clients 8``.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import importlib
import inspect
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.common import (
    BASE_DIR,
    RESULTS_DIR,
    SETTINGS,
    div,
    machine,
    package_version,
    publish,
    until_interrupted,
    warmup_seconds,
)
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
UPSTREAM_TOOLS = 50
GATEWAY_AGENT = "agent.bench.gateway"
GATEWAY_TOOL = "mcp__supabase__execute_sql"
# Targets (issue 38 sets the gateway's; the endpoint's come from issue 14): printed, never a failure.
P95_OVERHEAD_MS = 5.0  # at 1 client
P95_OVERHEAD_LOADED_MS = 10.0  # the gateway's at ``clients`` clients
RPS_VS_REST = 0.5
BREAKDOWN_CALLS = 1000


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


def prepare_gateway(upstream_url: str) -> str:
    """An agent whose manifest grants the upstream's execute_sql (rate limit out of the way) and the
    upstream's registration; returns the agent's key."""
    from django.db import connection

    from agents.registry import load_manifest
    from bench.common import MANIFEST
    from gateway.models import UpstreamServer
    from governance.kernel.principals import SYSTEM
    from governance.kernel.services import issue_api_key

    text = MANIFEST.read_text(encoding="utf-8").replace('id: "agent.seo.vlevel"', f'id: "{GATEWAY_AGENT}"')
    text = text.replace("rate_limit: 100\n", "rate_limit: 100000\n", 1)
    row, _ = load_manifest(text, actor=SYSTEM)
    UpstreamServer.objects.update_or_create(
        name="supabase",
        defaults={"url": upstream_url, "internal": True, "enabled": True},  # on this machine
    )
    _, key = issue_api_key(actor=SYSTEM, name="bench-gateway", agent=row.agent)
    connection.close()
    return key


@contextlib.contextmanager
def upstream(port: int, log: Path) -> Iterator[str]:
    """The upstream MCP server in its own process; yields its URL once it answers a ping."""
    with log.open("wb") as out:
        child = subprocess.Popen(
            [sys.executable, "-m", "bench.mcp_upstream", str(port), str(UPSTREAM_TOOLS)],
            cwd=BASE_DIR,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    ping = Request(
        "POST",
        "/mcp",
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode(),
        {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL,
        },
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                answer(port, ping)
                break
            except (OSError, RuntimeError):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the upstream did not start: {log.read_text()[-2000:]}") from None
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        child.terminate()
        child.wait(timeout=10)


def call(key: str | None, name: str) -> Request:
    request = mcp_request(key or "", "tools/call", {"name": name, "arguments": {"query": "select 1"}})
    if key is None:
        request.headers.pop("Authorization")
    return request


def measure_gateway(port: int, upstream_port: int, key: str, clients: int, duration: float) -> dict[str, dict]:
    governed, direct = call(key, GATEWAY_TOOL), call(None, "execute_sql")
    for at, request in ((port, governed), (upstream_port, direct)):
        result = answer(at, request)["result"]
        if result.get("isError") or "1 row" not in json.dumps(result):
            raise RuntimeError(f"tools/call did not answer the row: {json.dumps(result)[:500]}")
    listing = mcp_request(key, "tools/list", {})
    results: dict[str, dict] = {}
    for n in sorted({1, clients}):
        print(f"{n} client(s): upstream direct, through the gateway, gateway tools/list ...", flush=True)
        results[f"direct@{n}"] = phase(upstream_port, cycling([direct]), expect_status(200), n, duration)
        results[f"gateway@{n}"] = phase(port, cycling([governed]), expect_status(200), n, duration)
        results[f"gwlist@{n}"] = phase(port, cycling([listing]), expect_status(200), n, duration)
    return results


# Where a governed call's time goes: each step, by the function that does it, timed around every
# call of it in this process (a step this code does not have is left out, so an older commit's
# code can be timed by the same list: its checks were ``prepare``, its upstream call async).
STEPS = (
    ("key lookup", "gateway.views", "_read"),
    ("admission (one round trip)", "gateway.forwarding", "admit"),
    ("checks before the forward (the long way)", "gateway.forwarding", "prepare"),
    ("upstream call", "gateway.reach", "call"),
    ("secrets screen", "gateway.leaks", "check"),
    ("call log (outcome; now only queued)", "gateway.forwarding", "finish"),
)
# Off the request's path: the outcome written by the process's writer thread, after the answer.
AFTER_ANSWER = ("outcome write (writer thread, after the answer)", "gateway.outcomes", "complete")


def _timed(spent: list[float], function: Any) -> Any:
    if inspect.iscoroutinefunction(function):

        async def timed_async(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await function(*args, **kwargs)
            finally:
                spent.append(time.perf_counter() - started)

        return timed_async

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent.append(time.perf_counter() - started)

    return timed


def breakdown(key: str, calls: int = 1000) -> dict[str, Any]:
    """``calls`` governed calls through Django's own handler in this process (one client, no
    HTTP server: what remains is the handler, its middleware and the MCP transport), each step
    timed: mean milliseconds per call, and the rest of the request."""
    from django.test import Client

    client = Client()
    params = {"name": GATEWAY_TOOL, "arguments": {"query": "select 1"}}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    headers: dict[str, Any] = {
        "HTTP_AUTHORIZATION": f"Bearer {key}",
        "HTTP_ACCEPT": "application/json, text/event-stream",
        "HTTP_MCP_PROTOCOL_VERSION": PROTOCOL,
        "HTTP_HOST": "127.0.0.1",
    }

    def one() -> None:
        response = client.post("/mcp", body, content_type="application/json", **headers)
        if response.status_code != 200 or b'"isError":true' in response.content:
            raise RuntimeError(f"the governed call failed: {response.content[:500]!r}")

    for _ in range(50):
        one()
    spent: dict[str, list[float]] = {}
    patched = []
    for label, module_name, attribute in (*STEPS, AFTER_ANSWER):
        module = importlib.import_module(module_name)
        if hasattr(module, attribute):
            original = getattr(module, attribute)
            spent[label] = []
            setattr(module, attribute, _timed(spent[label], original))
            patched.append((module, attribute, original))
    totals = []
    try:
        for _ in range(calls):
            started = time.perf_counter()
            one()
            totals.append(time.perf_counter() - started)
    finally:
        for module, attribute, original in patched:
            setattr(module, attribute, original)
    outcomes = importlib.import_module("gateway.outcomes") if AFTER_ANSWER[0] in spent else None
    if outcomes is not None:
        outcomes.WRITER.flush()
    per_call = {label: round(sum(times) * 1000 / calls, 3) for label, times in spent.items()}
    after = per_call.pop(AFTER_ANSWER[0], None)
    total = sum(totals) * 1000 / calls
    per_call["handler, middleware and MCP transport (the rest)"] = round(total - sum(per_call.values()), 3)
    if after is not None:
        per_call[AFTER_ANSWER[0]] = after
    return {"calls": calls, "total_ms": round(total, 3), "steps_ms": per_call}


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
        direct, gateway = phases[f"direct@{n}"], phases[f"gateway@{n}"]
        out[f"gateway_rps_vs_direct@{n}"] = div(gateway["rps"], direct["rps"])
        out[f"gateway_p50_overhead_ms@{n}"] = round(gateway["p50_ms"] - direct["p50_ms"], 2)
        out[f"gateway_p95_overhead_ms@{n}"] = round(gateway["p95_ms"] - direct["p95_ms"], 2)
        rest, mcp = phases[f"rest@{n}"], phases[f"mcp@{n}"]
        out[f"mcp_rps_vs_rest@{n}"] = div(mcp["rps"], rest["rps"])
        out[f"mcp_p50_overhead_ms@{n}"] = round(mcp["p50_ms"] - rest["p50_ms"], 2)
        out[f"mcp_p95_overhead_ms@{n}"] = round(mcp["p95_ms"] - rest["p95_ms"], 2)
    return out


def targets(ratio: dict[str, float], counts: list[int]) -> dict[str, bool]:
    out = {}
    for n in counts:
        bound = P95_OVERHEAD_MS if n == 1 else P95_OVERHEAD_LOADED_MS
        out[f"gateway p95 overhead < {bound:g} ms at {n} client(s)"] = ratio[f"gateway_p95_overhead_ms@{n}"] < bound
        out[f"gateway throughput >= {RPS_VS_REST:.0%} of direct at {n} client(s)"] = (
            ratio[f"gateway_rps_vs_direct@{n}"] >= RPS_VS_REST
        )
        out[f"p95 overhead < {P95_OVERHEAD_MS:g} ms at {n} client(s)"] = (
            ratio[f"mcp_p95_overhead_ms@{n}"] < P95_OVERHEAD_MS
        )
        out[f"throughput >= {RPS_VS_REST:.0%} of REST at {n} client(s)"] = ratio[f"mcp_rps_vs_rest@{n}"] >= RPS_VS_REST
    return out


def breakdown_report(after: dict[str, Any], before: dict[str, Any] | None) -> list[str]:
    """Where a governed call's milliseconds go, now and (when recorded) before issue 38."""
    order = [label for label, _, _ in STEPS]
    labels = sorted(
        dict.fromkeys([*(before or {}).get("steps_ms", {}), *after["steps_ms"]]),
        key=lambda label: order.index(label) if label in order else len(order) + (label == AFTER_ANSWER[0]),
    )
    head = f"{'where a governed call goes (ms per call, 1 client, in process)':<58}"
    lines = [head + (f"{'before':>9}" if before else "") + f"{'now':>9}"]
    for label in labels:
        was = f"{before['steps_ms'].get(label, 0.0):>9.3f}" if before else ""
        lines.append(f"{label:<58}{was}{after['steps_ms'].get(label, 0.0):>9.3f}")
    total = f"{before['total_ms']:>9.3f}" if before else ""
    lines.append(f"{'total':<58}{total}{after['total_ms']:>9.3f}")
    if before:
        lines.append(f"(before: {before['commit']}, measured {before['timestamp']})")
    return lines


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
    lines += ["", *breakdown_report(result["breakdown"], result.get("breakdown_before")), ""]
    return "\n".join(lines)


BEFORE = RESULTS_DIR / "mcp_breakdown_before.json"


def recorded_before() -> dict[str, Any] | None:
    """The breakdown of the code before issue 38 (commit 2b559ed), measured by ``breakdown``
    itself on that commit (``--breakdown-only --before``), if it was."""
    return json.loads(BEFORE.read_text()) if BEFORE.exists() else None


def run(duration: float = 20, clients: int = 8) -> dict:
    load_before = os.getloadavg()
    key, database = prepare_jobs_database()
    upstream_port, port = free_port(), free_port()
    tmp = Path(tempfile.gettempdir())
    log = tmp / f"bench-mcp-gunicorn-{port}.log"
    with upstream(upstream_port, tmp / f"bench-mcp-upstream-{upstream_port}.log") as upstream_url:
        gateway_key = prepare_gateway(upstream_url)
        server = start_server(port, log)
        try:
            wait_healthy(server, port, log)
            print(f"gunicorn ({WORKERS} workers) on 127.0.0.1:{port}, log {log}", flush=True)
            phases = measure(port, key, clients, duration)
            phases.update(measure_gateway(port, upstream_port, gateway_key, clients, duration))
            print(f"the governed call's steps, {BREAKDOWN_CALLS} calls in this process ...", flush=True)
            steps = breakdown(gateway_key, BREAKDOWN_CALLS)
        finally:
            stop_server(server)
            stop_embedded_db_if_ours()
    counts = sorted({1, clients})
    ratio = ratios(phases, counts)
    result = {
        "benchmark": "mcp",
        "config": {
            "duration_s": duration,
            "warmup_s": warmup_seconds(duration),
            "clients": counts,
            "upstream_tools": UPSTREAM_TOOLS,
        },
        "config_server": {"workers": WORKERS, "worker_class": "sync", "settings": SETTINGS},
        "machine": machine(database, load_before, gunicorn=package_version("gunicorn"), mcp=package_version("mcp")),
        "phases": phases,
        "ratios": ratio,
        "breakdown": steps,
        "breakdown_before": recorded_before(),
        "targets": targets(ratio, counts),
    }
    return publish("mcp", result, report(result))


def run_breakdown(*, before: bool) -> dict:
    """Only the breakdown (the upstream, no server): ``--before`` records it as the code before
    issue 38's, which the full run prints beside its own."""
    load_before = os.getloadavg()
    _, database = prepare_jobs_database()
    port = free_port()
    with upstream(port, Path(tempfile.gettempdir()) / f"bench-mcp-upstream-{port}.log") as upstream_url:
        steps = breakdown(prepare_gateway(upstream_url), BREAKDOWN_CALLS)
    stop_embedded_db_if_ours()
    steps.update(machine(database, load_before))
    print("\n".join(breakdown_report(steps, None if before else recorded_before())))
    if before:
        BEFORE.write_text(json.dumps({**steps, "commit": steps["git_commit"]}, indent=2) + "\n")
        print(f"written to {BEFORE}")
    return steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench mcp", description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=20, help="seconds per phase (default 20)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients of the loaded phases (default 8)")
    parser.add_argument("--breakdown-only", action="store_true", help="only where a governed call's time goes")
    parser.add_argument("--before", action="store_true", help="with --breakdown-only: record it as the code before")
    args = parser.parse_args(argv)
    if args.breakdown_only:
        return until_interrupted(lambda: run_breakdown(before=args.before))
    return until_interrupted(lambda: run(duration=args.duration, clients=args.clients))


if __name__ == "__main__":
    sys.exit(main())
