"""``scheduler.tick()`` at fleet scale, the second measure of ``python -m bench sessions``.

For each fleet size, agents and sessions are written with ``bulk_create`` (mostly COMPLETED
history, active chats and automations, queued runs, due timers, idle automations, due scheduled
automations; the work is the same at every size, so the growth ratio measures the fleet), then
the first ``tick()`` (the work), the steady state (nothing to do) a few times, and ticks with
chats waiting for a reviewer past the inactivity timeout. Every statement of a tick is recorded
and the steady tick's reads are explained. A helper module of ``bench.sessions``, which runs it.

The fleet tables are truncated (CASCADE) between sizes, only on a database whose name ends with
``_bench_sessions``.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.common import div

DB_SUFFIX = "_bench_sessions"
BATCH = 5000

# Tables the tick measure rebuilds between fleet sizes (CASCADE reaches what points at them).
FLEET_TABLES = ("ai_sessions_sessionmessage", "ai_sessions_automation", "ai_sessions_aisession", "agents_agent")


# --- Database ------------------------------------------------------------------------------------


def require_bench_database(name: str) -> None:
    """Refuse a database whose name does not say it is this benchmark's: the run truncates tables."""
    if not name.endswith(DB_SUFFIX):  # a raise, not an assert: it must survive python -O
        raise RuntimeError(f"refusing to run on database {name!r}: it truncates tables (unset DATABASE_URL)")


def truncate_fleet() -> None:
    """Empty the session and agent tables; checked again here because TRUNCATE forgives nothing."""
    from django.db import connection

    require_bench_database(connection.settings_dict["NAME"])
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {', '.join(FLEET_TABLES)} CASCADE")


def vacuum_analyze() -> None:
    """Fresh statistics (and a visibility map) as autovacuum would leave them on a live system."""
    from django.db import connection

    with connection.cursor() as cursor:
        for table in FLEET_TABLES:
            cursor.execute(f"VACUUM ANALYZE {table}")


# --- Building a fleet ----------------------------------------------------------------------------


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


# --- Timing tick() -------------------------------------------------------------------------------


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
