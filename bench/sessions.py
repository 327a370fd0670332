"""Session events through the processor vs bare row writes, and ``scheduler.tick()`` at fleet scale.

Two measures, in process (no HTTP), on the benchmark's own database ``governance_bench_sessions``
on the embedded PostgreSQL (``bench.settings``):

* ``events``: ``threads`` threads, each driving one CHAT session of its own agent through
  ``sessions.processor.apply_event`` for ``duration`` seconds after a short unrecorded warm-up, one
  chat round after the other: ``UserMessageSent`` (which chains ``EnrichmentsExecuted`` on the
  server and rests in CALLING_AI) then ``AIResponseReceived`` (which chains ``AIResponseParsed``
  and rests in IDLE). Two baselines, same threads and duration, each on sessions of its own:
  ``bare``, per "event" one transaction that inserts one message row and updates one session row
  with raw SQL, the floor any implementation writing the same rows pays; and ``raw``, the same
  event written as the processor's own statements are, in raw SQL: the session row locked and
  read, its last message number read, the message inserted, the session's state updated, in one
  transaction (issue 18.4's raw-SQL baseline).
* ``tick``: fleets of 1 000 and 10 000 agents with 100 000 sessions each (mostly COMPLETED,
  active chats and automations, queued runs, due timers, idle automations, due scheduled
  automations), then the first ``tick()`` (the work), the steady state (nothing to do) five
  times, and one tick with chats waiting for a reviewer past the inactivity timeout. Building the
  fleets and timing ``tick()`` is ``bench/fleet.py``; this module runs both measures.

The run truncates the session and agent tables (CASCADE) of its database, so it refuses to run
on a database whose name does not end with ``_bench_sessions`` (e.g. one given by DATABASE_URL).
Celery tasks the processor hands off after commit go to the in-memory broker (``memory://``):
the bench must not feed the dev worker's queue with sessions of another database.

Run: ``python -m bench sessions --duration 20`` (or ``make bench BENCH_ARGS="sessions ..."``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from bench.common import (
    MANIFEST,
    div,
    machine,
    package_version,
    percentile,
    prepare_database,
    publish,
    run_threads,
    warmup_seconds,
)
from bench.fleet import Work, expected_first, growth, require_bench_database, run_tick, truncate_fleet

DB_NAME = "governance_bench_sessions"
CELERY_BROKER = "memory://localhost/"  # never the dev worker's queue (see the docstring)
ERROR_SAMPLES = 5

# Targets from the issue; printed as met / missed, never a failure.
EVENTS_PER_S = 200.0
EVENTS_PER_S_4 = 400.0  # issue 18.4, with the default 4 concurrent sessions
TICK_MAX_S = 1.0


# --- Database ------------------------------------------------------------------------------------


def prepare_sessions_database() -> str:
    """Migrate the benchmark's own database in this process; returns where it is.

    Refuses a database whose name does not say it is this benchmark's: the run truncates tables.
    """
    return prepare_database(DB_NAME, {"CELERY_BROKER_URL": CELERY_BROKER}, check=require_bench_database)


def postgres_version() -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        return cursor.fetchone()[0]


# --- Statistics ----------------------------------------------------------------------------------


@dataclass
class Tally:
    """What the threads of one measure saw. Appends are thread-safe under the GIL; ``+=`` is
    not, so the counters move under a lock."""

    latencies: list[float] = field(default_factory=list)
    chained: int = 0
    errors: int = 0
    samples: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def error(self, exc: BaseException) -> None:
        with self.lock:
            self.errors += 1
            if len(self.samples) < ERROR_SAMPLES:
                self.samples.append(repr(exc)[:500])

    def add_chained(self, count: int) -> None:
        with self.lock:
            self.chained += count


def summarise(tally: Tally, seconds: float, threads: int) -> dict[str, Any]:
    ordered = sorted(tally.latencies)
    ms = [round(percentile(ordered, p) * 1000, 2) for p in (50, 95, 99)]
    events = len(ordered)
    return {
        "threads": threads,
        "events": events,
        "chained_events": tally.chained,
        "errors": tally.errors,
        "seconds": round(seconds, 2),
        "events_per_s": round(events / seconds, 1) if seconds else 0.0,
        "with_chained_per_s": round((events + tally.chained) / seconds, 1) if seconds else 0.0,
        "p50_ms": ms[0],
        "p95_ms": ms[1],
        "p99_ms": ms[2],
        "error_samples": tally.samples,
    }


# --- Events through the processor vs bare writes -------------------------------------------------

Step = tuple[str, dict[str, Any], str]  # event, payload, the phase the session must rest in after it


def chat_round(n: int) -> list[Step]:
    """One realistic chat round: 2 external events, each chaining one event on the server."""
    text = f"Audit the V-level of https://example.com/p/{n} and tell me what to fix first."
    return [
        ("UserMessageSent", {"text": text}, "CALLING_AI"),  # + EnrichmentsExecuted
        ("AIResponseReceived", {"content": json.dumps({"preText": "ok"})}, "IDLE"),  # + AIResponseParsed
    ]


def register_agents(count: int) -> list[Any]:
    """``bench.agent_<n>``: the shipped vlevel manifest with only its id changed."""
    from agents.manifest import read_text
    from agents.registry import load_manifest
    from governance.kernel.principals import SYSTEM

    document = read_text(MANIFEST.read_text(encoding="utf-8"))
    rows = [load_manifest({**document, "id": f"bench.agent_{n}"}, actor=SYSTEM)[0] for n in range(count)]
    return [row.agent for row in rows]


def platform_worker(agent: Any, session_id: uuid.UUID, deadline: float, tally: Tally) -> None:
    """Chat rounds through apply_event on this thread's own connection, until the deadline."""
    from django.db import connection

    from governance.kernel.principals import Principal
    from sessions.processor import apply_event

    actor = Principal(agent=agent)
    chained = 0
    try:
        for n in itertools.count():
            if time.perf_counter() >= deadline:
                return
            for event, payload, rests_in in chat_round(n):
                started = time.perf_counter()
                try:
                    outcome = apply_event(session_id, event, payload, actor=actor)
                except Exception as exc:  # a refused event means the session is off track: stop
                    tally.error(exc)
                    return
                tally.latencies.append(time.perf_counter() - started)
                chained += outcome.session.phase == rests_in  # its chained event was applied
    finally:
        tally.add_chained(chained)
        connection.close()


INSERT_MESSAGE = (
    "INSERT INTO ai_sessions_sessionmessage (message_id, session_id, seq, timestamp, sender, rich_content,"
    " ai_message, ai_message_json, system_type, exclude_from_prompt, fallback_kind)"
    " VALUES (%s, %s, %s, %s, %s, %s::jsonb, %s::jsonb, %s, '', false, '')"
)
UPDATE_SESSION = (
    "UPDATE ai_sessions_aisession SET phase = %s, total_roundtrips = total_roundtrips + %s,"
    " last_event_time = %s, last_activity = %s WHERE session_id = %s"
)


def bare_rows(n: int, seq: int) -> list[tuple[list[Any], list[Any]]]:
    """The rows a chat round writes (a USER then an AI message), as (insert, update) parameters."""
    text = f"Audit the V-level of https://example.com/p/{n} and tell me what to fix first."
    rich = json.dumps({"segments": [{"type": "text", "text": text}], "linearText": text, "dataCommands": []})
    content = json.dumps({"preText": "ok"})
    return [
        ([seq, "USER", rich, None, None], ["CALLING_AI", 0]),
        ([seq + 1, "AI", None, content, content], ["IDLE", 1]),
    ]


def last_seq(session_id: uuid.UUID) -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(max(seq), 0) FROM ai_sessions_sessionmessage WHERE session_id = %s", [session_id]
        )
        return cursor.fetchone()[0]


def bare_worker(session_id: uuid.UUID, deadline: float, tally: Tally) -> None:
    """Per event one transaction: INSERT one message, UPDATE one session. No ORM, no machine."""
    from django.db import connection, transaction

    try:
        seq = last_seq(session_id) + 1  # the warm-up wrote to the same session
        for n in itertools.count():
            if time.perf_counter() >= deadline:
                return
            for (seq_, sender, rich, ai, raw), (phase, trips) in bare_rows(n, seq):
                started = time.perf_counter()
                now = datetime.now(UTC)
                try:
                    with transaction.atomic(), connection.cursor() as cursor:
                        cursor.execute(INSERT_MESSAGE, [uuid.uuid4(), session_id, seq_, now, sender, rich, ai, raw])
                        cursor.execute(UPDATE_SESSION, [phase, trips, now, now, session_id])
                except Exception as exc:
                    tally.error(exc)
                    return
                tally.latencies.append(time.perf_counter() - started)
            seq += 2
    finally:
        connection.close()


LOCK_SESSION = (
    "SELECT phase, total_roundtrips, last_event_time, waiting_context, is_active, tokens_used"
    " FROM ai_sessions_aisession WHERE session_id = %s FOR UPDATE"
)
LAST_SEQ = "SELECT coalesce(max(seq), 0) FROM ai_sessions_sessionmessage WHERE session_id = %s"


def raw_worker(session_id: uuid.UUID, deadline: float, tally: Tally) -> None:
    """Per event the processor's statements in raw SQL, one transaction: lock and read the
    session, read its last message number, insert the message, update the session."""
    from django.db import connection, transaction

    try:
        for n in itertools.count():
            if time.perf_counter() >= deadline:
                return
            for (_, sender, rich, ai, raw), (phase, trips) in bare_rows(n, 0):
                started = time.perf_counter()
                now = datetime.now(UTC)
                try:
                    with transaction.atomic(), connection.cursor() as cursor:
                        cursor.execute(LOCK_SESSION, [session_id])
                        cursor.fetchone()
                        cursor.execute(LAST_SEQ, [session_id])
                        seq = cursor.fetchone()[0] + 1
                        cursor.execute(INSERT_MESSAGE, [uuid.uuid4(), session_id, seq, now, sender, rich, ai, raw])
                        cursor.execute(UPDATE_SESSION, [phase, trips, now, now, session_id])
                except Exception as exc:
                    tally.error(exc)
                    return
                tally.latencies.append(time.perf_counter() - started)
    finally:
        connection.close()


def drive(targets: list[Callable[[float, Tally], None]], seconds: float) -> dict[str, Any]:
    """One thread per target for ``seconds``; the clock stops when the last thread is done."""
    tally = Tally()
    started = time.perf_counter()
    deadline = started + seconds
    threads = [threading.Thread(target=t, args=(deadline, tally), daemon=True) for t in targets]
    run_threads(threads)
    return summarise(tally, time.perf_counter() - started, len(targets))


def measure(targets: list[Callable[[float, Tally], None]], duration: float) -> dict[str, Any]:
    """A warm-up (connections, lazy imports, plan caches) that is thrown away, then the measure."""
    drive(targets, warmup_seconds(duration))
    return drive(targets, duration)


def run_events(threads: int, duration: float) -> dict[str, Any]:
    """Both measures on the same agents: the platform's chat sessions, then bare sessions."""
    from governance.kernel.principals import Principal
    from sessions.models import AISession
    from sessions.scheduler import start_chat

    agents = register_agents(threads)
    chats = [
        start_chat(agent, actor=Principal(agent=agent), name="bench chat", require_validation=False) for agent in agents
    ]
    bare = [AISession.objects.create(agent=agent, name="bench bare", type="CHAT") for agent in agents]
    raw = [AISession.objects.create(agent=agent, name="bench raw", type="CHAT") for agent in agents]
    print(f"events: {threads} threads x apply_event chat rounds for {duration:g} s ...", flush=True)
    platform_targets = [_bind(platform_worker, agent, chat.pk) for agent, chat in zip(agents, chats, strict=True)]
    result = {"platform": measure(platform_targets, duration)}
    print(f"events: {threads} threads x bare INSERT + UPDATE transactions for {duration:g} s ...", flush=True)
    result["bare"] = measure([_bind(bare_worker, session.pk) for session in bare], duration)
    print(f"events: {threads} threads x raw SQL (lock, last seq, INSERT, UPDATE) for {duration:g} s ...", flush=True)
    result["raw"] = measure([_bind(raw_worker, session.pk) for session in raw], duration)
    result["check"] = check_chats(chats)
    return result


def _bind(worker: Callable[..., None], *args: Any) -> Callable[[float, Tally], None]:
    return lambda deadline, tally: worker(*args, deadline, tally)


def check_chats(chats: list[Any]) -> dict[str, Any]:
    """The sessions must have ended where a chat round ends: IDLE, 2 messages per round trip."""
    from django.db.models import Count

    from sessions.models import AISession

    rows = AISession.objects.filter(pk__in=[c.pk for c in chats]).annotate(message_count=Count("messages"))
    return {
        "phases": sorted({row.phase for row in rows}),
        "round_trips": sum(row.total_roundtrips for row in rows),
        "messages": sum(row.message_count for row in rows),
    }


# --- Report --------------------------------------------------------------------------------------


def targets(result: dict[str, Any]) -> dict[str, bool]:
    met: dict[str, bool] = {}
    events = result.get("events")
    if events:
        rate = events["platform"]["events_per_s"]
        met[f"processor >= {EVENTS_PER_S:g} events/s"] = rate >= EVENTS_PER_S
        threads = events["platform"]["threads"]
        met[
            f"events >= {EVENTS_PER_S_4:g}/s with {threads} concurrent sessions ({rate:g} events/s, "
            f"{events['ratios']['platform/raw events/s']:.0%} of raw SQL's {events['raw']['events_per_s']:g})"
        ] = rate >= EVENTS_PER_S_4
    ticks = result.get("ticks") or []
    if ticks:
        largest = ticks[-1]
        met[f"first tick < {TICK_MAX_S:g} s at {largest['agents']} agents"] = largest["first"]["seconds"] < TICK_MAX_S
        met[f"steady tick < {TICK_MAX_S:g} s at {largest['agents']} agents"] = largest["steady_median_s"] < TICK_MAX_S
    grow = result.get("growth") or {}
    if grow:
        bound = grow["fleet_ratio"]
        met[f"first tick grows no worse than linearly (ratio <= {bound:g})"] = grow["first_tick_ratio"] <= bound
        met[f"steady tick grows no worse than linearly (ratio <= {bound:g})"] = grow["steady_tick_ratio"] <= bound
    return met


def report_events(events: dict[str, Any]) -> list[str]:
    lines = [
        f"{'events':<10}{'threads':>8}{'events':>9}{'chained':>9}{'errors':>8}{'ev/s':>9}{'+chained/s':>12}"
        f"{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}"
    ]
    for name in ("platform", "bare", "raw"):
        p = events[name]
        lines.append(
            f"{name:<10}{p['threads']:>8}{p['events']:>9}{p['chained_events']:>9}{p['errors']:>8}"
            f"{p['events_per_s']:>9.1f}{p['with_chained_per_s']:>12.1f}{p['p50_ms']:>9.2f}{p['p95_ms']:>9.2f}"
            f"{p['p99_ms']:>9.2f}"
        )
    check = events["check"]
    lines.append(
        f"chat sessions end in {check['phases']}, {check['round_trips']} round trips, {check['messages']} messages"
    )
    lines += [f"{name:<34}{value:.3f}" for name, value in events["ratios"].items()]
    for name in ("platform", "bare", "raw"):
        lines += [f"error sample ({name}): {sample}" for sample in events[name]["error_samples"]]
    return lines


def report_ticks(ticks: list[dict[str, Any]]) -> list[str]:
    lines = [
        f"{'agents':>7}{'sessions':>9}{'load s':>8}{'first s':>9}{'stmts':>7}{'sql ms':>8}"
        f"{'2nd s':>9}{'median s':>10}{'stmts':>7}{'stale-chat s':>14}"
    ]
    for t in ticks:
        first, stale = t["first"], t.get("stale_chats", {}).get("median_s", math.nan)
        lines.append(
            f"{t['agents']:>7}{t['sessions']:>9}{t['fleet']['load_s']:>8.1f}{first['seconds']:>9.3f}"
            f"{first['statements']:>7}{first['sql_ms']:>8.0f}{t['second']['seconds']:>9.4f}"
            f"{t['steady_median_s']:>10.4f}{t['second']['statements']:>7}{stale:>14.4f}"
        )
    for t in ticks:
        lines.append(f"first tick at {t['agents']} agents: {first_tick_did(t['first'])}")
    for t in ticks:
        slowest = max(t["steady_plans"], key=lambda p: p["ms_in_tick"], default=None)
        if slowest:
            lines.append(f"slowest steady read at {t['agents']} agents: {slowest['ms_in_tick']} ms")
        if "stale_chats" in t:
            stale = t["stale_chats"]
            lines.append(
                f"steady tick with {stale['chats']} chats waiting past the timeout at {t['agents']} agents: "
                f"{stale['median_s']:.4f} s, {stale['last']['statements']} statements, counts {stale['last']['counts']}"
            )
    return lines


def first_tick_did(first: dict[str, Any]) -> str:
    """The counts tick() returned, each with the time and statements of its step when known."""
    steps, counts = first["steps"], first["counts"]
    keys = {"timers": "timers", "watchdog": "timeouts", "reviews": "expired_reviews", "starts": "started"}
    parts = []
    for step, key in keys.items():
        detail = steps.get(step)
        timing = f" ({detail['seconds']:.3f} s, {detail['statements']} stmts)" if detail else ""
        parts.append(f"{key} {counts.get(key)}{timing}")
    return ", ".join(parts)


def report(result: dict[str, Any]) -> str:
    lines: list[str] = []
    if result.get("events"):
        lines += [*report_events(result["events"]), ""]
    if result.get("ticks"):
        lines += report_ticks(result["ticks"])
        lines += [f"{name:<34}{value:.3f}" for name, value in result["growth"].items()]
        lines.append(f"expected first tick: {result['config']['expected_first_tick']}")
        lines.append("")
    box = result["machine"]
    lines.append(f"load average before/after: {box['loadavg_before'][0]} / {box['loadavg_after'][0]}")
    return "\n".join(lines)


def print_plans(ticks: list[dict[str, Any]]) -> None:
    for t in ticks:
        for plan in t["steady_plans"]:
            print(f"\n-- {t['agents']} agents, {plan['ms_in_tick']} ms in the tick:\n{plan['sql']}")
            print("\n".join(plan["plan"]))


# --- Entry points --------------------------------------------------------------------------------


def run(
    duration: float = 20,
    threads: int = 4,
    fleets: tuple[int, ...] = (1000, 10000),
    sessions: int = 100_000,
    work: Work | None = None,
    repeats: int = 5,
    only: str | None = None,
    show_plans: bool = False,
) -> dict:
    """Prepare the database, measure events then ticks (or ``only`` one), write the JSON."""
    work = work or Work()
    load_before = os.getloadavg()
    database = prepare_sessions_database()
    truncate_fleet()  # a clean slate: earlier runs' chats and fleets would skew both measures
    result: dict[str, Any] = {
        "benchmark": "sessions",
        "config": {
            "duration_s": duration,
            "warmup_s": warmup_seconds(duration),
            "threads": threads,
            "fleets": list(fleets),
            "sessions": sessions,
            "work": asdict(work),
            "steady_repeats": repeats,
            "expected_first_tick": expected_first(work),
            "celery_broker": CELERY_BROKER,
        },
    }
    if only in (None, "events"):
        events = run_events(threads, duration)
        platform_, bare, raw = events["platform"], events["bare"], events["raw"]
        events["ratios"] = {
            "platform/bare events/s": div(platform_["events_per_s"], bare["events_per_s"]),
            "platform/bare p50": div(platform_["p50_ms"], bare["p50_ms"]),
            "platform/bare p95": div(platform_["p95_ms"], bare["p95_ms"]),
            "platform/raw events/s": div(platform_["events_per_s"], raw["events_per_s"]),
            "platform/raw p50": div(platform_["p50_ms"], raw["p50_ms"]),
        }
        result["events"] = events
    if only in (None, "tick"):
        result["ticks"] = [run_tick(agents, sessions, work, repeats) for agents in sorted(fleets)]
        result["growth"] = growth(result["ticks"])
    result["machine"] = machine(database, load_before, psycopg=package_version("psycopg"), postgres=postgres_version())
    result["targets"] = targets(result)
    if show_plans and result.get("ticks"):
        print_plans(result["ticks"])
    return publish("sessions", result, report(result))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench sessions", description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=20, help="seconds per events measure (default 20)")
    parser.add_argument("--threads", "--clients", type=int, default=4, help="sessions/threads (default 4)")
    parser.add_argument("--fleets", default="1000,10000", help="agent counts, comma-separated (default 1000,10000)")
    parser.add_argument("--sessions", type=int, default=100_000, help="sessions per fleet (default 100000)")
    parser.add_argument("--repeats", type=int, default=5, help="steady-state ticks (default 5)")
    parser.add_argument("--queued", type=int, default=Work.queued, help="queued runs the first tick starts")
    parser.add_argument("--due-automations", type=int, default=Work.due_automations)
    parser.add_argument("--timers", type=int, default=Work.timers, help="due timers the first tick fires")
    parser.add_argument("--idle", type=int, default=Work.idle, help="idle automations the watchdog closes")
    parser.add_argument("--stale-chats", type=int, default=Work.stale_chats, help="0 skips the stale-chat tick")
    parser.add_argument("--only", choices=("events", "tick"), help="run one of the two measures")
    parser.add_argument("--plans", action="store_true", help="print EXPLAIN ANALYZE of the steady tick's reads")
    args = parser.parse_args(argv)
    work = Work(args.queued, args.due_automations, args.timers, args.idle, args.stale_chats)
    fleets = tuple(int(n) for n in args.fleets.split(","))
    run(args.duration, args.threads, fleets, args.sessions, work, args.repeats, args.only, args.plans)
    return 0


if __name__ == "__main__":
    sys.exit(main())
