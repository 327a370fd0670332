"""Session events through the processor vs bare row writes, and ``scheduler.tick()`` at fleet scale.

Two measures, in process (no HTTP), on the benchmark's own database ``governance_bench_sessions``
on the embedded PostgreSQL (``bench.settings``):

* ``events``: ``threads`` threads, each driving one CHAT session of its own agent through
  ``sessions.processor.apply_event`` for ``duration`` seconds after a short unrecorded warm-up, one
  chat round after the other: ``UserMessageSent`` (which chains ``EnrichmentsExecuted`` on the
  server and rests in CALLING_AI) then ``AIResponseReceived`` (which chains ``AIResponseParsed``
  and rests in IDLE). The baseline, same threads and duration: per "event" one transaction that
  inserts one message row and updates one session row with raw SQL, the floor any implementation
  writing the same rows pays.
* ``tick``: fleets of 1 000 and 10 000 agents with 100 000 sessions each (mostly COMPLETED,
  active chats and automations, queued runs, due timers, idle automations, due scheduled
  automations), then the first ``tick()`` (the work), the steady state (nothing to do) five
  times, and one tick with chats waiting for a reviewer past the inactivity timeout.

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
import platform
import random
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from importlib import metadata
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results" / "sessions.json"
SETTINGS = "bench.settings"
DB_NAME = "governance_bench_sessions"
DB_SUFFIX = "_bench_sessions"
MANIFEST = BASE_DIR / "agents" / "manifests" / "agent.seo.vlevel.yaml"
ERROR_SAMPLES = 5
BATCH = 5000

# Targets from the issue; printed as met / missed, never a failure.
EVENTS_PER_S = 200.0
TICK_MAX_S = 1.0

# Tables the tick measure rebuilds between fleet sizes (CASCADE reaches what points at them).
FLEET_TABLES = ("ai_sessions_sessionmessage", "ai_sessions_automation", "ai_sessions_aisession", "agents_agent")


# --- Database ------------------------------------------------------------------------------------


def prepare_database() -> str:
    """Migrate the benchmark's own database in this process; returns where it is.

    Refuses a database whose name does not say it is this benchmark's: the run truncates tables.
    """
    os.environ["DJANGO_SETTINGS_MODULE"] = SETTINGS
    os.environ["EMBEDDED_DB_NAME"] = DB_NAME
    os.environ["CELERY_BROKER_URL"] = "memory://localhost/"  # never the dev worker's queue (see the docstring)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    name = connection.settings_dict["NAME"]
    if not name.endswith(DB_SUFFIX):
        raise RuntimeError(f"refusing to run on database {name!r}: it truncates tables (unset DATABASE_URL)")
    call_command("migrate", interactive=False, verbosity=0)
    return f"{'DATABASE_URL' if os.environ.get('DATABASE_URL') else 'embedded'}: {name}"


def truncate_fleet() -> None:
    """Empty the session and agent tables; checked again here because TRUNCATE forgives nothing."""
    from django.db import connection

    name = connection.settings_dict["NAME"]
    if not name.endswith(DB_SUFFIX):  # an assertion that survives python -O
        raise AssertionError(f"not the sessions bench database: {name!r}")
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {', '.join(FLEET_TABLES)} CASCADE")


def vacuum_analyze() -> None:
    """Fresh statistics (and a visibility map) as autovacuum would leave them on a live system."""
    from django.db import connection

    with connection.cursor() as cursor:
        for table in FLEET_TABLES:
            cursor.execute(f"VACUUM ANALYZE {table}")


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


def percentile(ordered: list[float], pct: float) -> float:
    """Nearest-rank percentile of an already sorted list (no interpolation between samples)."""
    if not ordered:
        return math.nan
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


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


def div(a: float, b: float) -> float:
    return round(a / b, 3) if b and not math.isnan(a) and not math.isnan(b) else math.nan


# --- (a) events through the processor vs bare writes ----------------------------------------------

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
    from governance.principals import SYSTEM

    document = read_text(MANIFEST.read_text(encoding="utf-8"))
    rows = [load_manifest({**document, "id": f"bench.agent_{n}"}, actor=SYSTEM)[0] for n in range(count)]
    return [row.agent for row in rows]


def platform_worker(agent: Any, session_id: uuid.UUID, deadline: float, tally: Tally) -> None:
    """Chat rounds through apply_event on this thread's own connection, until the deadline."""
    from django.db import connection

    from governance.principals import Principal
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


def drive(targets: list[Callable[[float, Tally], None]], seconds: float) -> dict[str, Any]:
    """One thread per target for ``seconds``; the clock stops when the last thread is done."""
    tally = Tally()
    started = time.perf_counter()
    deadline = started + seconds
    threads = [threading.Thread(target=t, args=(deadline, tally), daemon=True) for t in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        while thread.is_alive():  # join() with a timeout stays interruptible by Ctrl-C
            thread.join(0.2)
    return summarise(tally, time.perf_counter() - started, len(targets))


def warmup_seconds(duration: float) -> float:
    return min(3.0, duration / 10)


def measure(targets: list[Callable[[float, Tally], None]], duration: float) -> dict[str, Any]:
    """A warm-up (connections, lazy imports, plan caches) that is thrown away, then the measure."""
    drive(targets, warmup_seconds(duration))
    return drive(targets, duration)


def run_events(threads: int, duration: float) -> dict[str, Any]:
    """Both measures on the same agents: the platform's chat sessions, then bare sessions."""
    from sessions.models import AISession
    from sessions.scheduler import start_chat

    agents = register_agents(threads)
    chats = [start_chat(agent, name="bench chat", require_validation=False) for agent in agents]
    bare = [AISession.objects.create(agent=agent, name="bench bare", type="CHAT") for agent in agents]
    print(f"events: {threads} threads x apply_event chat rounds for {duration:g} s ...", flush=True)
    platform_targets = [_bind(platform_worker, agent, chat.pk) for agent, chat in zip(agents, chats, strict=True)]
    result = {"platform": measure(platform_targets, duration)}
    print(f"events: {threads} threads x bare INSERT + UPDATE transactions for {duration:g} s ...", flush=True)
    result["bare"] = measure([_bind(bare_worker, session.pk) for session in bare], duration)
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


# --- (b) tick() at fleet scale --------------------------------------------------------------------


@dataclass(frozen=True)
class Work:
    """How much the first tick has to do; the same at every fleet size, so the growth ratio
    measures the fleet, not the work."""

    queued: int = 100  # inactive AUTOMATION waiting for its agent's free slot (1 in 5 suspended mid-run)
    due_automations: int = 20  # SCHEDULED automations past next_run_at on a free agent
    timers: int = 30  # active sessions whose phase timer is due (closure, network retry, confirmation)
    idle: int = 30  # active AUTOMATIONs waiting for a reviewer past the inactivity timeout
    stale_chats: int = 20  # for the extra tick: CHATs waiting for a reviewer past the timeout


ACTIVE_CHAT_SHARE = 0.05  # agents with an active CHAT resting in IDLE
ACTIVE_AUTOMATION_SHARE = 0.05  # agents with an active AUTOMATION in CALLING_AI
AUTOMATION_EVERY = 5  # every 5th agent owns a SEED session and a (not yet due) SCHEDULED automation
END_REASONS = (("COMPLETED", 70), ("CANCELLED", 10), ("TIMEOUT", 8), ("LIMIT_REACHED", 6), ("ERROR", 6))
SUSPENDED_CHAT_SHARE = 0.07  # background rows that are suspended CHATs (a chat pre-empted them)


def roles(agents: int, work: Work, rng: random.Random) -> list[str]:
    """One role per agent, shuffled: what its one notable session is (or ``none``)."""
    counts = {
        "chat": round(agents * ACTIVE_CHAT_SHARE),
        "calling": round(agents * ACTIVE_AUTOMATION_SHARE),
        "queued": work.queued,
        "due": work.due_automations,
        "timer": work.timers,
        "idle": work.idle,
    }
    if sum(counts.values()) > agents:
        raise ValueError(f"{agents} agents cannot hold {counts}")
    out = [role for role, count in counts.items() for _ in range(count)]
    out += ["none"] * (agents - len(out))
    rng.shuffle(out)
    return out


class FleetBuilder:
    """AISession rows for one fleet, written with bulk_create in batches as they are made."""

    def __init__(self, now: datetime, rng: random.Random) -> None:
        self.now, self.rng = now, rng
        self.sessions: list[Any] = []
        self.automations: list[Any] = []
        self.written = 0

    def ago(self, low: timedelta, high: timedelta) -> datetime:
        return self.now - low - (high - low) * self.rng.random()

    def add(self, agent_id: int, **fields: Any) -> Any:
        from sessions.models import AISession

        fields.setdefault("name", f"{fields.get('type', 'AUTOMATION').lower()} session")
        fields.setdefault("tokens_used", {"input": 1200, "output": 300, "cacheWrite": 0, "cacheRead": 800})
        session = AISession(agent_id=agent_id, **fields)
        self.sessions.append(session)
        if len(self.sessions) >= BATCH:
            self.flush()
        return session

    def flush(self) -> None:
        from sessions.models import AISession

        AISession.objects.bulk_create(self.sessions, batch_size=BATCH)
        self.written += len(self.sessions)
        self.sessions = []

    # --- one notable session per role ---

    def role(self, agent_id: int, role: str, index: int) -> None:
        make = {
            "chat": self.active_chat,
            "calling": self.calling,
            "queued": self.queued,
            "timer": self.timer,
            "idle": self.idle,
        }.get(role)
        if make is not None:
            make(agent_id, index)

    def active_chat(self, agent_id: int, index: int) -> None:
        last = self.ago(timedelta(0), timedelta(hours=10))  # old ones too: the watchdog skips chats
        self.add(
            agent_id,
            type="CHAT",
            phase="IDLE",
            is_active=True,
            total_roundtrips=4,
            last_event_time=last,
            last_user_interaction_time=last,
        )

    def calling(self, agent_id: int, index: int) -> None:
        self.add(
            agent_id,
            type="AUTOMATION",
            phase="CALLING_AI",
            is_active=True,
            total_roundtrips=3,
            trigger="SCHEDULED",
            queued_at=self.ago(timedelta(hours=1), timedelta(hours=3)),
            last_event_time=self.ago(timedelta(0), timedelta(hours=2)),
        )

    def queued(self, agent_id: int, index: int) -> None:
        queued_at = self.ago(timedelta(minutes=1), timedelta(hours=2))
        if index % 5 == 4:  # suspended mid-run by a chat that has ended since
            self.add(
                agent_id,
                type="AUTOMATION",
                phase="CALLING_AI",
                end_reason="SUSPENDED",
                total_roundtrips=3,
                trigger="MANUAL",
                queued_at=queued_at,
                last_event_time=queued_at,
            )
        else:
            self.add(agent_id, type="AUTOMATION", phase="IDLE", trigger="MANUAL", queued_at=queued_at)

    def timer(self, agent_id: int, index: int) -> None:
        """Three kinds of due timers, each with the event valid for its phase."""
        at = self.ago(timedelta(seconds=1), timedelta(seconds=20))
        common = {"type": "AUTOMATION", "is_active": True, "timer_at": at, "total_roundtrips": 5, "trigger": "MANUAL"}
        kind = index % 3
        if kind == 0:
            self.add(
                agent_id,
                phase="AWAITING_SESSION_CLOSURE",
                timer_event="SessionCompleted",
                pending_end_reason="COMPLETED",
                last_event_time=at - timedelta(seconds=5),
                **common,
            )
        elif kind == 1:
            self.add(
                agent_id,
                phase="WAITING_NETWORK_RETRY",
                timer_event="NetworkAvailable",
                last_event_time=at - timedelta(seconds=30),
                **common,
            )
        else:
            context = {
                "type": "CompletionConfirmation",
                "aiMessageId": None,
                "scheduledConfirmationTime": at.isoformat(),
            }
            self.add(
                agent_id,
                phase="WAITING_COMPLETION_CONFIRMATION",
                timer_event="CompletionConfirmed",
                waiting_context=context,
                last_event_time=at - timedelta(seconds=5),
                **common,
            )

    def idle(self, agent_id: int, index: int, session_type: str = "AUTOMATION") -> None:
        """Waiting for a reviewer for hours: the watchdog closes an AUTOMATION (never a CHAT)."""
        since = self.ago(timedelta(hours=1), timedelta(hours=6))
        if index % 2:
            phase, context = "WAITING_VALIDATION", {"type": "Validation", "validationContext": {}}
        else:
            module = {"type": "MultipleChoice", "data": {"question": "Which pages first?", "options": ["a", "b"]}}
            phase, context = "WAITING_COMMUNICATION_RESPONSE", {"type": "Communication", "communicationModule": module}
        self.add(
            agent_id,
            type=session_type,
            phase=phase,
            is_active=True,
            waiting_context=context,
            total_roundtrips=2,
            last_event_time=since,
            last_user_interaction_time=since,
        )

    # --- history and templates ---

    def background(self, agent_id: int) -> None:
        """A finished session (with its end reason), or now and then a suspended chat."""
        if self.rng.random() < SUSPENDED_CHAT_SHARE:
            last = self.ago(timedelta(hours=1), timedelta(days=30))
            self.add(
                agent_id,
                type="CHAT",
                phase="IDLE",
                end_reason="SUSPENDED",
                total_roundtrips=2,
                last_event_time=last,
                last_user_interaction_time=last,
            )
            return
        reason = self.rng.choices([r for r, _ in END_REASONS], weights=[w for _, w in END_REASONS])[0]
        session_type = "AUTOMATION" if self.rng.random() < 0.6 else "CHAT"
        last = self.ago(timedelta(hours=1), timedelta(days=90))
        self.add(
            agent_id,
            type=session_type,
            phase="COMPLETED",
            end_reason=reason,
            total_roundtrips=self.rng.randint(1, 20),
            last_event_time=last,
            queued_at=last - timedelta(minutes=10) if session_type == "AUTOMATION" else None,
            trigger="SCHEDULED" if session_type == "AUTOMATION" else "",
        )

    def automation(self, agent_id: int, due: bool) -> None:
        """A SEED session and its SCHEDULED automation: due now, or later this hour."""
        from sessions.models import Automation

        seed = self.add(agent_id, type="SEED", name="daily audit (seed)")
        if due:
            next_run = self.ago(timedelta(minutes=1), timedelta(minutes=10))
        else:
            next_run = self.now + timedelta(minutes=1 + 59 * self.rng.random())
        self.automations.append(
            Automation(
                agent_id=agent_id,
                name="daily audit",
                seed_session_id=seed.pk,
                interval_minutes=60,
                next_run_at=next_run,
                created_by="bench",
            )
        )


def build_fleet(agents: int, sessions: int, work: Work, now: datetime, seed: int = 7) -> dict[str, Any]:
    """Agents and ``sessions`` sessions spread evenly over them, then fresh statistics."""
    from agents.models import Agent
    from sessions.models import Automation

    started = time.perf_counter()
    truncate_fleet()
    rng = random.Random(seed)
    Agent.objects.bulk_create(
        (
            Agent(agent_id=f"bench.fleet_{n:05d}", name=f"Fleet agent {n}", role="executor", domain="seo")
            for n in range(agents)
        ),
        batch_size=BATCH,
    )
    ids = list(Agent.objects.order_by("pk").values_list("pk", flat=True))
    builder = FleetBuilder(now, rng)
    per_agent, extra = divmod(sessions, agents)
    seen: dict[str, int] = {}
    for position, (agent_id, role) in enumerate(zip(ids, roles(agents, work, rng), strict=True)):
        index = seen[role] = seen.get(role, -1) + 1
        before = builder.written + len(builder.sessions)
        builder.role(agent_id, role, index)
        if role == "due" or position % AUTOMATION_EVERY == 0:
            builder.automation(agent_id, due=role == "due")
        want = per_agent + (position < extra)
        while builder.written + len(builder.sessions) - before < want:
            builder.background(agent_id)
    builder.flush()
    Automation.objects.bulk_create(builder.automations, batch_size=BATCH)
    load_s = time.perf_counter() - started
    vacuum_analyze()
    return {
        "load_s": round(load_s, 1),
        "vacuum_analyze_s": round(time.perf_counter() - started - load_s, 1),
        "automations": len(builder.automations),
        "states": fleet_states(),
    }


def fleet_states() -> dict[str, int]:
    """How the sessions are spread (type / active / phase), to show the fleet is what we claim."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT type, is_active, phase, count(*) FROM ai_sessions_aisession GROUP BY 1, 2, 3 ORDER BY 4 DESC"
        )
        return {f"{t} {'active' if a else 'inactive'} {p}": n for t, a, p, n in cursor.fetchall()}


@dataclass
class Statement:
    sql: str
    params: Any
    at: float  # perf_counter when it was sent
    ms: float


class Recorder:
    """Django's execute_wrapper: every statement a tick sends, when, and its wall time."""

    def __init__(self) -> None:
        self.statements: list[Statement] = []

    def __call__(self, execute: Callable, sql: str, params: Any, many: bool, context: dict) -> Any:
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.statements.append(Statement(sql, params, started, (time.perf_counter() - started) * 1000))


# The read that opens each step of tick(), in order; a step runs until the next one opens.
# Only for the report: when the scheduler's SQL changes, the split is left out, not wrong.
STEP_MARKERS = (
    ("timers", 'WHERE "ai_sessions_aisession"."timer_at" <='),
    ("watchdog", '"last_user_interaction_time" <'),
    ("reviews", 'FROM "governance_reviewitem" WHERE'),
    ("starts", 'FROM "agents_agent" WHERE (NOT EXISTS'),
)


@dataclass
class TickRun:
    seconds: float
    counts: dict[str, int]
    statements: list[Statement]
    started: float

    def steps(self) -> dict[str, dict[str, float]]:
        """Wall time, statements and time inside SQL calls per step of the tick. A step runs from
        the end of the previous step's last statement (so building its own first query counts)
        to the end of its own last one; the last step runs to the end of the tick."""
        firsts: list[int] = []
        for _, marker in STEP_MARKERS:
            start = firsts[-1] + 1 if firsts else 0
            found = next((i for i in range(start, len(self.statements)) if marker in self.statements[i].sql), None)
            if found is None:
                return {}
            firsts.append(found)
        out = {}
        begin = self.started
        for n, (name, _) in enumerate(STEP_MARKERS):
            chunk = self.statements[firsts[n] : firsts[n + 1] if n + 1 < len(firsts) else None]
            last = chunk[-1]
            end = last.at + last.ms / 1000 if n + 1 < len(firsts) else self.started + self.seconds
            out[name] = {
                "seconds": round(end - begin, 4),
                "statements": len(chunk),
                "sql_ms": round(sum(st.ms for st in chunk), 1),
            }
            begin = end
        return out

    def summary(self) -> dict[str, Any]:
        return {
            "seconds": round(self.seconds, 4),
            "counts": self.counts,
            "statements": len(self.statements),
            "sql_ms": round(sum(st.ms for st in self.statements), 1),
            "steps": self.steps(),
        }


def timed_tick(now: datetime) -> TickRun:
    from django.db import connection

    from sessions import scheduler

    recorder = Recorder()
    with connection.execute_wrapper(recorder):
        started = time.perf_counter()
        counts = scheduler.tick(now=now)
        seconds = time.perf_counter() - started
    return TickRun(seconds, counts, recorder.statements, started)


def explain(statements: list[Statement]) -> list[dict[str, Any]]:
    """EXPLAIN (ANALYZE, BUFFERS) of each read a steady tick sends: where its time goes."""
    from django.db import connection

    plans = []
    with connection.cursor() as cursor:
        for statement in statements:
            if not statement.sql.lstrip().upper().startswith("SELECT"):
                continue
            cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {statement.sql}", statement.params)
            plan = [row[0] for row in cursor.fetchall()]
            plans.append({"sql": statement.sql, "ms_in_tick": round(statement.ms, 2), "plan": plan})
    return plans


def add_stale_chats(count: int, now: datetime) -> int:
    """CHATs waiting for a reviewer for hours on agents with a free slot (the machine never
    closes a chat, so every tick looks at them again)."""
    from django.db.models import Exists, OuterRef

    from agents.models import Agent
    from sessions.models import AISession

    busy = AISession.objects.filter(agent=OuterRef("pk"), is_active=True)
    free = list(Agent.objects.filter(~Exists(busy)).order_by("pk").values_list("pk", flat=True)[:count])
    builder = FleetBuilder(now, random.Random(11))
    for index, agent_id in enumerate(free):
        builder.idle(agent_id, index, session_type="CHAT")
    builder.flush()
    return len(free)


def run_tick(agents: int, sessions: int, work: Work, repeats: int) -> dict[str, Any]:
    """Build the fleet, then the first tick, the steady state, and the stale-chat tick, all at
    one fixed ``now`` so the 5 s closure timers the first tick arms are not due in the next ones."""
    now = datetime.now(UTC)
    print(f"tick: building {agents} agents / {sessions} sessions ...", flush=True)
    fleet = build_fleet(agents, sessions, work, now)
    first = timed_tick(now)
    steady = [timed_tick(now) for _ in range(repeats)]
    result: dict[str, Any] = {
        "agents": agents,
        "sessions": sessions,
        "fleet": fleet,
        "first": first.summary(),
        "second": steady[0].summary(),
        "steady_seconds": [round(run.seconds, 4) for run in steady],
        "steady_median_s": round(statistics.median(run.seconds for run in steady), 4),
        "steady_counts": [run.counts for run in steady],
        "steady_plans": explain(steady[-1].statements),
    }
    if work.stale_chats:
        added = add_stale_chats(work.stale_chats, now)
        stale = [timed_tick(now) for _ in range(3)]
        result["stale_chats"] = {
            "chats": added,
            "median_s": round(statistics.median(run.seconds for run in stale), 4),
            "last": stale[-1].summary(),
        }
    return result


def expected_first(work: Work) -> dict[str, int]:
    return {
        "timers": work.timers,
        "timeouts": work.idle,
        "expired_reviews": 0,
        "started": work.queued + work.due_automations,
    }


# --- Report --------------------------------------------------------------------------------------


def growth(ticks: list[dict[str, Any]]) -> dict[str, Any]:
    """Largest fleet's time over the smallest's, next to the fleet ratio (the linear bound)."""
    if len(ticks) < 2:
        return {}
    small, large = ticks[0], ticks[-1]
    return {
        "fleet_ratio": div(large["agents"], small["agents"]),
        "first_tick_ratio": div(large["first"]["seconds"], small["first"]["seconds"]),
        "steady_tick_ratio": div(large["steady_median_s"], small["steady_median_s"]),
    }


def targets(result: dict[str, Any]) -> dict[str, bool]:
    met: dict[str, bool] = {}
    events = result.get("events")
    if events:
        met[f"processor >= {EVENTS_PER_S:g} events/s"] = events["platform"]["events_per_s"] >= EVENTS_PER_S
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


def machine(database: str, load_before: tuple[float, ...], postgres: str) -> dict[str, Any]:
    """Where the numbers come from; the load averages flag a run that shared its cores."""
    return {
        "cpu_count": os.cpu_count(),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "platform": platform.platform(),
        "python": platform.python_version(),
        "django": metadata.version("django"),
        "psycopg": metadata.version("psycopg"),
        "postgres": postgres,
        "git_commit": git_commit(),
        "database": database,
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def git_commit() -> str | None:
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=BASE_DIR, capture_output=True, text=True, timeout=10)
    except OSError:
        return None
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def report_events(events: dict[str, Any]) -> list[str]:
    lines = [
        f"{'events':<10}{'threads':>8}{'events':>9}{'chained':>9}{'errors':>8}{'ev/s':>9}{'+chained/s':>12}"
        f"{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}"
    ]
    for name in ("platform", "bare"):
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
    for name in ("platform", "bare"):
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
    lines += [f"[{'met' if met else 'MISSED'}] {name}" for name, met in result["targets"].items()]
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
    database = prepare_database()
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
            "celery_broker": "memory://localhost/",
        },
    }
    if only in (None, "events"):
        events = run_events(threads, duration)
        platform_, bare = events["platform"], events["bare"]
        events["ratios"] = {
            "platform/bare events/s": div(platform_["events_per_s"], bare["events_per_s"]),
            "platform/bare p50": div(platform_["p50_ms"], bare["p50_ms"]),
            "platform/bare p95": div(platform_["p95_ms"], bare["p95_ms"]),
        }
        result["events"] = events
    if only in (None, "tick"):
        result["ticks"] = [run_tick(agents, sessions, work, repeats) for agents in sorted(fleets)]
        result["growth"] = growth(result["ticks"])
    result["machine"] = machine(database, load_before, postgres_version())
    result["targets"] = targets(result)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    if show_plans and result.get("ticks"):
        print_plans(result["ticks"])
    print(report(result))
    print(f"written to {RESULTS.relative_to(BASE_DIR)}")
    return result


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
