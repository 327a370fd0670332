"""The session scheduler (seed 003's AISessionScheduler): one active session per agent, CHAT
pre-empts AUTOMATION, MANUAL runs queue FIFO, SCHEDULED runs start only on a free slot with an
empty queue, orphans resume, timers fire, and the watchdog closes idle sessions.

``tick()`` works set-wise: each step asks PostgreSQL for the few rows that need something (due
timers, idle sessions, agents with a free slot and work waiting), so its cost follows the work
to do, not the size of the fleet. Per agent, the agent row is locked (SKIP LOCKED, so two ticks
share the work instead of queueing) and the partial unique index is the last word.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.db.models.functions import Coalesce, Now
from django.utils import timezone

from agents import quotas
from agents.models import Agent
from governance.kernel import periodic, retention, rows
from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Conflict, Forbidden
from governance.kernel.principals import SYSTEM, Principal
from governance.kernel.services import record
from governance.reviews import services as reviews
from governance.reviews.models import ReviewDecision, ReviewItem
from sessions import enrichments, processor
from sessions import limits as session_limits
from sessions.effects import REVIEW_KINDS
from sessions.machine import ACTIVE_PHASES, WAITING_PHASES, EndReason, Event, Phase, SessionType
from sessions.models import AISession, Automation, SessionMessage
from sessions.processor import apply_event

logger = logging.getLogger(__name__)

# Agents started per transaction by a tick: their rows stay locked until it commits (a chat
# request for one of them waits that long), and a refused batch is redone agent by agent.
START_BATCH = 100

# AUTOMATION runs waiting for the slot: queued, suspended, cut off by the network, or orphaned
# (what the agent's `queued_sessions` quota counts).
QUEUED = (
    Q(is_active=False, type=SessionType.AUTOMATION.value)
    & ~Q(phase=Phase.COMPLETED.value)
    & (Q(end_reason__isnull=True) | Q(end_reason__in=[EndReason.NETWORK_ERROR.value, EndReason.SUSPENDED.value]))
)
# Everything that takes the slot back when it frees: the queue, and a CHAT suspended for a newer
# one (seed section 5: "reprend automatiquement quand slot libre"), oldest first like the rest.
RESUMABLE = QUEUED | (
    Q(is_active=False, type=SessionType.CHAT.value, end_reason=EndReason.SUSPENDED.value)
    & ~Q(phase=Phase.COMPLETED.value)
)


def _resumable(now: datetime) -> Q:
    """RESUMABLE, and due: a session whose agent missed a deadline is queued a little ahead."""
    return RESUMABLE & (Q(queued_at__isnull=True) | Q(queued_at__lte=now))


def _locked_agent(agent_id: int) -> Agent | None:
    return Agent.objects.select_for_update(of=("self",)).filter(pk=agent_id).first()


def _active(agent: Agent) -> AISession | None:
    return AISession.objects.select_for_update(of=("self",)).filter(agent=agent, is_active=True).first()


def _activate(session: AISession, now: datetime) -> bool:
    """Activate in a savepoint; the partial unique index refuses a second active session."""
    try:
        with transaction.atomic():
            apply_event(session.pk, Event.SESSION_ACTIVATION_REQUESTED, {}, actor=SYSTEM, now=now)
    except (IntegrityError, Conflict) as exc:
        logger.info("[scheduler] activation refused: session=%s reason=%s", session.pk, exc.__class__.__name__)
        return False
    return True


def _release(active: AISession, now: datetime) -> None:
    """Free the slot for a CHAT: a session closing anyway ends now; anything else is SUSPENDED
    and resumes when the slot frees (a CHAT as an AUTOMATION). A question it left with the
    reviewers stays open: a decision taken meanwhile applies when it resumes."""
    if active.phase == Phase.AWAITING_SESSION_CLOSURE:
        apply_event(active.pk, Event.SESSION_COMPLETED, {}, actor=SYSTEM, now=now)
        return
    apply_event(active.pk, Event.SESSION_COMPLETED, {"endReason": EndReason.SUSPENDED.value}, actor=SYSTEM, now=now)


def _withdraw(item_id: int, why: str) -> None:
    if ReviewItem.objects.filter(pk=item_id, status=ReviewItem.Status.PENDING).exists():
        reviews.decide(item_id, actor=SYSTEM, decision=ReviewDecision.Decision.EXPIRE, comment=why, notify=False)


# --- starting sessions ---------------------------------------------------------------------


def _require_manifest(agent: Agent) -> None:
    """R1 (seed 001): an agent without an active manifest may do nothing, sessions included."""
    if agent.active_manifest_id is None:
        raise Forbidden(f"R1: agent {agent.agent_id!r} has no active manifest.", agent=agent.agent_id)


def check_queue_quota(agent: Agent, actor: Principal) -> None:
    """One more waiting AUTOMATION run (queued, suspended or orphaned) must fit the agent's quota;
    the agent row is locked so simultaneous requests count one after the other."""
    locked = _locked_agent(agent.pk)
    quotas.check(locked, "queued_sessions", AISession.objects.filter(QUEUED, agent=locked), actor=actor)


# Not durable: load_demo runs each app's demo, which calls this, in one transaction.
@transaction.atomic
def start_chat(
    agent: Agent,
    *,
    actor: Principal,
    name: str,
    require_validation: bool,
    now: datetime | None = None,
    story: str = "",
    domain: str = "",
    project: str = "",
) -> AISession:
    """CHAT interrupts whatever the agent was doing, at once (seed section 5). ``story`` (with
    ``domain`` and ``project``) is the memory the prompt carries (sessions.prompt)."""
    now = now or timezone.now()
    _require_manifest(agent)
    agent = _locked_agent(agent.pk)
    active = _active(agent)
    if active is not None:
        _release(active, now)
    session = AISession.objects.create(
        agent=agent,
        name=name,
        type=SessionType.CHAT.value,
        require_validation=require_validation,
        story=story,
        domain=domain,
        project=project,
    )
    record(actor=actor, action=AuditAction.SESSION_STARTED, target=session, type=session.type, name=name)
    apply_event(session.pk, Event.SESSION_ACTIVATION_REQUESTED, {}, actor=SYSTEM, now=now)
    session.refresh_from_db()
    return session


def _new_runs(automations: list[Automation], trigger: str, now: datetime) -> list[AISession]:
    """A new run of each automation, its SEED's user messages copied in order: one INSERT of the
    sessions, one read of the seeds' messages and one INSERT of the copies, however many."""
    runs = AISession.objects.bulk_create(
        AISession(
            agent_id=automation.agent_id,
            name=f"{automation.name} · {now:%Y-%m-%d %H:%M}",
            type=SessionType.AUTOMATION.value,
            automation=automation,
            trigger=trigger,
            queued_at=now,
            scheduled_execution_time=automation.next_run_at if trigger == Automation.Trigger.SCHEDULED else None,
            provider_id=automation.provider,
            story=automation.seed_session.story,
            domain=automation.seed_session.domain,
            project=automation.seed_session.project,
        )
        for automation in automations
    )
    instructions: dict[UUID, list[SessionMessage]] = {automation.seed_session_id: [] for automation in automations}
    for message in SessionMessage.objects.filter(session_id__in=instructions, sender="USER", removed_at__isnull=True):
        instructions[message.session_id].append(message)  # in seq order (the model's ordering)
    SessionMessage.objects.bulk_create(
        SessionMessage(
            session=run,
            seq=n,
            timestamp=now,
            sender=message.sender,
            rich_content=message.rich_content,
            text_content=message.text_content,
        )
        for automation, run in zip(automations, runs, strict=True)
        for n, message in enumerate(instructions[automation.seed_session_id], start=1)
    )
    return runs


@transaction.atomic(durable=True)
def queue_automation_session(
    agent: Agent,
    *,
    actor: Principal,
    name: str,
    require_validation: bool,
    messages: list[dict[str, Any]] | None = None,
    now: datetime | None = None,
    story: str = "",
    domain: str = "",
    project: str = "",
) -> AISession:
    """An AUTOMATION session the agent drives itself: queued, started when its turn comes.
    ``messages`` are its instructions, stored as the USER messages an automation run copies from
    its SEED, so activation runs their enrichments and the model reads them, as for any run."""
    now = now or timezone.now()
    _require_manifest(agent)
    check_queue_quota(agent, actor)
    session = AISession.objects.create(
        agent=agent,
        name=name,
        type=SessionType.AUTOMATION.value,
        require_validation=require_validation,
        queued_at=now,
        trigger=Automation.Trigger.MANUAL.value,
        story=story,
        domain=domain,
        project=project,
    )
    _store_instructions(session, messages or [], now)
    record(
        actor=actor,
        action=AuditAction.SESSION_QUEUED,
        target=session,
        type=session.type,
        name=name,
        messages=len(messages or []),
    )
    fill_slot(agent.pk, now=now)
    session.refresh_from_db()
    return session


# Not durable: an event automation runs inside the transaction of the event that fired it.
@transaction.atomic
def execute_automation(
    automation: Automation,
    *,
    actor: Principal,
    now: datetime | None = None,
    trigger: str = Automation.Trigger.MANUAL,
) -> tuple[str, AISession]:
    """MANUAL (or EVENT) trigger: a new run joins the agent's queue; it starts now only if it is
    first."""
    now = now or timezone.now()
    _require_manifest(automation.agent)
    check_queue_quota(automation.agent, actor)
    (session,) = _new_runs([automation], Automation.Trigger(trigger).value, now)
    record(
        actor=actor, action=AuditAction.AUTOMATION_EXECUTED, target=session, automation=automation.pk, trigger=trigger
    )
    fill_slot(automation.agent_id, now=now)
    session.refresh_from_db()
    return ("active" if session.is_active else "queued"), session


def create_seed(
    agent: Agent,
    *,
    name: str,
    messages: list[dict[str, Any]],
    now: datetime,
    story: str = "",
    domain: str = "",
    project: str = "",
) -> AISession:
    """A SEED session: the template an automation copies at each run (its messages, and the
    story, domain and project of its memory block); never executed itself."""
    seed = AISession.objects.create(
        agent=agent, name=name, type=SessionType.SEED.value, story=story, domain=domain, project=project
    )
    _store_instructions(seed, messages, now)
    return seed


def _store_instructions(session: AISession, messages: list[dict[str, Any]], now: datetime) -> None:
    """An automation's instructions as USER messages (text, or segments with enrichments, their
    periods relative: seed section 10), in order from seq 1."""
    for n, message in enumerate(messages, start=1):
        segments = message.get("segments") or [{"type": "text", "text": message.get("text") or ""}]
        rich = enrichments.rich_message(
            segments,
            is_relative=True,
            now=now,
            day_start_hour=settings.SESSION_DAY_START_HOUR,
            week_start_day=settings.SESSION_WEEK_START_DAY,
        )
        SessionMessage.objects.create(session=session, seq=n, timestamp=now, sender="USER", rich_content=rich)


@transaction.atomic(durable=True)
def stop(session: AISession, *, actor: Principal, now: datetime | None = None) -> AISession:
    """STOP: the session ends CANCELLED and never resumes; who stopped it is recorded, and a
    question it left with the reviewers is withdrawn. The owning agent or an operator with the
    change permission may stop; the end itself is the platform's event, emitted on their behalf."""
    if actor.agent is not None and actor.agent.pk != session.agent_id:
        raise Forbidden("This session belongs to another agent.")
    if actor.agent is None and actor.user is not None and not actor.has_perm("ai_sessions.change_aisession"):
        raise Forbidden("Stopping sessions needs the ai_sessions.change_aisession permission.")
    waiting = (session.waiting_context or {}).get("reviewItemId")
    apply_event(session.pk, Event.SESSION_COMPLETED, {"endReason": EndReason.CANCELLED.value}, actor=SYSTEM, now=now)
    session.refresh_from_db()
    record(actor=actor, action=AuditAction.SESSION_STOPPED, target=session, phase=session.phase)
    if waiting:
        _withdraw(waiting, f"Withdrawn: the session was stopped by {actor.label}.")
    return session


# --- the tick --------------------------------------------------------------------------------


def fill_slot(agent_id: int, *, now: datetime) -> AISession | None:
    """If the agent's slot is free: resume the oldest queued or orphaned session, else start a
    due SCHEDULED automation (only when nothing is queued)."""
    # Not durable: every write that frees or fills an agent's slot calls it inside its own transaction.
    with transaction.atomic():
        agent = _locked_agent(agent_id)
        if agent is None or AISession.objects.filter(agent=agent, is_active=True).exists():
            return None
        waiting = AISession.objects.filter(_resumable(now), agent=agent).order_by(Coalesce("queued_at", "created_at"))
        candidate = waiting.first()
        if candidate is None:
            automation = (
                Automation.objects.select_for_update(of=("self",))
                .select_related("seed_session")
                .filter(agent=agent, enabled=True, trigger=Automation.Trigger.SCHEDULED, next_run_at__lte=now)
                .order_by("next_run_at")
                .first()
            )
            if automation is None:
                return None
            (candidate,) = _scheduled_runs([automation], now)
        return candidate if _activate(candidate, now) else None


def _scheduled_runs(automations: list[Automation], now: datetime) -> list[AISession]:
    """The due run of each SCHEDULED automation, and its next run time moved past ``now``."""
    runs = _new_runs(automations, Automation.Trigger.SCHEDULED.value, now)
    for automation, run in zip(automations, runs, strict=True):
        assert run.scheduled_execution_time is not None  # a SCHEDULED run is due in its slot
        automation.next_run_at = automation.next_run_following(run.scheduled_execution_time, now)
    rows.update_many(automations, ["next_run_at"])
    return runs


def _start_batch(agent_ids: list[int], now: datetime, failures: periodic.Failures) -> int:
    """``fill_slot`` for a batch of agents, set-wise: each kind of work is one statement for the
    whole batch (lock the agents, read their active sessions, their queued ones, their due
    automations; create the runs; activate). If the batch meets what the per-agent path handles
    one by one (a refused activation, a second active session) or fails, it is rolled back and
    that path decides for each agent of the batch: an agent whose start fails is reported under
    ``errors`` without holding back the others."""
    with transaction.atomic(durable=True):
        locked = list(
            Agent.objects.select_for_update(skip_locked=True)
            .filter(pk__in=agent_ids)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        try:
            with transaction.atomic():
                return len(_start_locked(locked, now))
        except periodic.ENDS_THE_RUN:
            raise
        except Exception as exc:  # refused (IntegrityError, Conflict) or failed: each agent decides on its own
            logger.info("[scheduler] batch start refused (%s): agent by agent", exc.__class__.__name__)
        started = 0
        for agent_id in locked:
            with failures.guard(f"agent {agent_id}"):
                started += fill_slot(agent_id, now=now) is not None
        return started


def _start_locked(agent_ids: list[int], now: datetime) -> list[AISession]:
    """What ``fill_slot`` starts for each of these locked agents, decided for all at once."""
    busy = set(AISession.objects.filter(agent_id__in=agent_ids, is_active=True).values_list("agent_id", flat=True))
    free = [agent_id for agent_id in agent_ids if agent_id not in busy]
    # The oldest waiting session of each free agent (DISTINCT ON takes the first row per agent).
    waiting = dict(
        AISession.objects.filter(_resumable(now), agent_id__in=free)
        .order_by("agent_id", Coalesce("queued_at", "created_at"))
        .distinct("agent_id")
        .values_list("agent_id", "pk")
    )
    # An agent with nothing queued runs its earliest due SCHEDULED automation (the rows are
    # locked; FOR UPDATE cannot go with DISTINCT ON, so the earliest is picked here).
    due: dict[int, Automation] = {}
    for automation in (
        Automation.objects.select_for_update(of=("self",))
        .select_related("seed_session")
        .filter(
            agent_id__in=[agent_id for agent_id in free if agent_id not in waiting],
            enabled=True,
            trigger=Automation.Trigger.SCHEDULED,
            next_run_at__lte=now,
        )
        .order_by("agent_id", "next_run_at", "pk")
    ):
        due.setdefault(automation.agent_id, automation)
    runs = _scheduled_runs(list(due.values()), now) if due else []
    return processor.activate_many([*waiting.values(), *(run.pk for run in runs)], now=now)


def fire_timer(session_id: str, event: str, at: str, *, now: datetime | None = None) -> bool:
    """Fire a session's timer if it is still the one armed and it is due (a re-armed or
    cancelled timer is ignored)."""
    now = now or timezone.now()
    # Not durable: periodic's guard holds each item in a savepoint when the run is inside a transaction.
    with transaction.atomic():
        session = AISession.objects.select_for_update(skip_locked=True).filter(pk=session_id).first()
        if session is None or session.timer_event != event or session.timer_at is None:
            return False
        if session.timer_at.isoformat() != at or session.timer_at > now:
            return False
        try:
            apply_event(session.pk, event, {}, actor=SYSTEM, now=now)
        except Conflict:
            return False
    return True


def _due_timers(now: datetime, failures: periodic.Failures) -> int:
    fired = 0
    for session_id, event, at in AISession.objects.filter(timer_at__lte=now).values_list(
        "pk", "timer_event", "timer_at"
    ):
        with failures.guard(f"session {session_id} timer {event}"):
            fired += fire_timer(str(session_id), event, at.isoformat(), now=now)
    return fired


def fire_deadline(session_id: str, at: str, *, now: datetime | None = None) -> bool:
    """The active phase's deadline, if it is still the one armed and it has passed; the machine
    decides what an overdue phase means (sessions.machine.deadline_passed)."""
    now = now or timezone.now()
    # Not durable: periodic's guard holds each item in a savepoint when the run is inside a transaction.
    with transaction.atomic():
        session = AISession.objects.select_for_update(skip_locked=True).filter(pk=session_id, is_active=True).first()
        if session is None or session.phase_deadline_at is None:
            return False
        if session.phase_deadline_at.isoformat() != at or session.phase_deadline_at > now:
            return False
        try:
            apply_event(session.pk, Event.PHASE_DEADLINE_PASSED, {}, actor=SYSTEM, now=now)
        except Conflict:
            return False
    return True


def _overdue(now: datetime, failures: periodic.Failures) -> int:
    """The backstop for deadline timers the broker lost: one indexed query for every active
    session past its phase's deadline, whatever the size of the fleet."""
    fired = 0
    overdue = AISession.objects.filter(is_active=True, phase_deadline_at__lte=now)
    for session_id, at in overdue.values_list("pk", "phase_deadline_at"):
        with failures.guard(f"session {session_id} deadline"):
            fired += fire_deadline(str(session_id), at.isoformat(), now=now)
    return fired


def _watchdog(now: datetime, failures: periodic.Failures) -> int:
    """Sessions idle past the shortest timeout any of them has (a manifest may set its agent's
    own) get a heartbeat; the machine judges each against its agent's limit and decides."""
    running = AISession.objects.filter(is_active=True).exclude(type=SessionType.CHAT.value)
    manifests = running.values_list("agent__active_manifest_id", flat=True).distinct()
    cutoff = now - session_limits.shortest_inactivity_timeout(manifests)
    waiting = Q(phase__in=[p.value for p in WAITING_PHASES])
    # A wait counts from the last user interaction, or from when it began if there was none.
    quiet = (
        waiting
        & (
            Q(last_user_interaction_time__lt=cutoff)
            | Q(last_user_interaction_time__isnull=True, last_event_time__lt=cutoff)
        )
    ) | (
        ~Q(phase__in=[p.value for p in WAITING_PHASES | ACTIVE_PHASES] + [Phase.WAITING_NETWORK_RETRY.value])
        & Q(last_event_time__lt=cutoff)
    )
    # A chat never closes by itself (seed section 6): only automations are looked at.
    idle = AISession.objects.filter(quiet, is_active=True).exclude(type=SessionType.CHAT.value)
    closed = 0
    for session_id, context in idle.values_list("pk", "waiting_context"):
        with failures.guard(f"session {session_id} heartbeat"):
            try:
                outcome = apply_event(session_id, Event.SCHEDULER_HEARTBEAT, {}, actor=SYSTEM, now=now)
            except Conflict:
                continue
            if outcome.session.phase == Phase.AWAITING_SESSION_CLOSURE:
                closed += 1
                item_id = (context or {}).get("reviewItemId")
                if item_id:  # nobody is left to receive the answer
                    _withdraw(item_id, "Withdrawn: the session timed out waiting for it.")
    return closed


def _expire_reviews(now: datetime, failures: periodic.Failures) -> int:
    """A request nobody answered in time is rejected, recorded as a decision by `system`."""
    expired = 0
    due = ReviewItem.objects.filter(
        status=ReviewItem.Status.PENDING, kind__in=REVIEW_KINDS.values(), expires_at__lte=now
    ).values_list("pk", flat=True)
    for item_id in due:
        with failures.guard(f"review item {item_id}"):
            try:
                reviews.decide(
                    item_id,
                    actor=SYSTEM,
                    decision=ReviewDecision.Decision.EXPIRE,
                    comment="Not decided in time: rejected.",
                )
            except Conflict:
                continue
            expired += 1
    return expired


def _agents_with_work(now: datetime) -> list[int]:
    """Agents whose slot is free and that have a queued/orphaned session or a due automation."""
    busy = AISession.objects.filter(agent=OuterRef("pk"), is_active=True)
    waiting = AISession.objects.filter(_resumable(now), agent=OuterRef("pk"))
    due = Automation.objects.filter(
        agent=OuterRef("pk"), enabled=True, trigger=Automation.Trigger.SCHEDULED, next_run_at__lte=now
    )
    return list(Agent.objects.filter(~Exists(busy) & (Exists(waiting) | Exists(due))).values_list("pk", flat=True))


def tick(now: datetime | None = None) -> dict[str, Any]:
    """One pass of the scheduler; safe to run concurrently with itself. A session (or agent)
    whose step raises is reported under ``errors``; the rest of the fleet is scheduled all the
    same."""
    now = now or timezone.now()
    failures = periodic.Failures("scheduler")
    counts = {
        "timers": _due_timers(now, failures),
        "deadlines": _overdue(now, failures),
        "timeouts": _watchdog(now, failures),
        "expired_reviews": _expire_reviews(now, failures),
    }
    agent_ids = _agents_with_work(now)
    counts["started"] = sum(
        _start_batch(agent_ids[n : n + START_BATCH], now, failures) for n in range(0, len(agent_ids), START_BATCH)
    )
    return {**counts, **failures.as_dict()}


def next_session(agent: Agent) -> AISession | None:
    """The session the agent should work on now: its active one."""
    return AISession.objects.filter(agent=agent, is_active=True).select_related("automation").first()


def _messages_of_finished_sessions(cutoff: datetime) -> QuerySet[SessionMessage]:
    return SessionMessage.objects.filter(
        archived_at__isnull=True, session__phase=Phase.COMPLETED.value, session__last_activity__lt=cutoff
    ).exclude(session__in=Automation.objects.values("seed_session"))


# Archived, never pruned: a finished session keeps the order, senders and times of its messages
# (and the action results that name them); their contents go. A COMPLETED session never resumes,
# and a seed session is left whole: its automation copies its user messages into every run.
MESSAGE_RETENTION = retention.Policy(
    name="session messages",
    action=retention.ARCHIVE,
    candidates=_messages_of_finished_sessions,
    archived={
        "rich_content": None,
        "text_content": None,
        "ai_message": None,
        "ai_message_json": None,
        "system_message": None,
        "execution_metadata": None,
        "archived_at": Now(),
    },
)
