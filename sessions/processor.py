"""The event processor (seed 003's AIEventProcessor): applies an event to a session in one
transaction, carries out the machine's effects (messages, commands, review requests, timers),
follows the events the server raises itself, and tells the agent what to do next.

The session row is locked (SELECT ... FOR UPDATE) for the whole chain, so concurrent events on
one session are applied one after the other, never interleaved.
"""

from __future__ import annotations

import functools
import json
import logging
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from django.db import IntegrityError, connection, transaction
from django.db.models import Model
from django.utils import timezone
from pydantic import ValidationError

from agents.models import Agent
from governance.kernel import dispatch, metrics, rows
from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Conflict, Forbidden, InvalidInput
from governance.kernel.principals import SYSTEM, Principal
from governance.kernel.services import record
from sessions import effects, executor, machine
from sessions import limits as session_limits
from sessions.commands import system_message
from sessions.machine import Event, EventInput, Phase, SessionType, SystemMessageType
from sessions.models import ActionResult, AISession, Automation, ProviderProfile, SessionMessage
from sessions.schemas import EVENT_PAYLOADS

logger = logging.getLogger(__name__)

# The number of the session's last message (0 before the first), as raw SQL: every event that
# adds a message reads it, and the ORM's aggregate cost more to compile than to run.
_LAST_SEQ_SQL = (
    f"SELECT coalesce(max(seq), 0) FROM {connection.ops.quote_name(SessionMessage._meta.db_table)}"
    " WHERE session_id = %s"
)

MAX_CHAIN = 50  # events the server may raise itself in one go; more means a loop


def to_state(session: AISession) -> machine.State:
    return machine.State(
        session_type=SessionType(session.type),
        phase=Phase(session.phase),
        total_roundtrips=session.total_roundtrips,
        last_event_time=session.last_event_time,
        last_user_interaction_time=session.last_user_interaction_time,
        waiting_context=session.waiting_context,
        is_active=session.is_active,
        end_reason=machine.EndReason(session.end_reason) if session.end_reason else None,
        pending_end_reason=machine.EndReason(session.pending_end_reason) if session.pending_end_reason else None,
        timer_at=session.timer_at,
        timer_event=Event(session.timer_event) if session.timer_event else None,
        deadline_at=session.phase_deadline_at,
        hosted_calls=_hosted(session),
        hosted_actions=effects.simulates_actions(session),
    )


def _hosted(session: AISession) -> bool:
    """The server calls the model (an automation with a provider profile)."""
    return bool(session.automation_id and session.automation.provider)


SAVED_FIELDS = [
    "phase",
    "total_roundtrips",
    "last_event_time",
    "last_user_interaction_time",
    "waiting_context",
    "is_active",
    "end_reason",
    "pending_end_reason",
    "timer_at",
    "timer_event",
    "tokens_used",
    "last_activity",
    "phase_deadline_at",
    "queued_at",
    "provider_session_id",
]


def _store_state(session: AISession, state: machine.State) -> None:
    session.phase = state.phase.value
    session.total_roundtrips = state.total_roundtrips
    session.last_event_time = state.last_event_time
    session.last_user_interaction_time = state.last_user_interaction_time
    session.waiting_context = state.waiting_context
    session.is_active = state.is_active
    session.end_reason = state.end_reason.value if state.end_reason else None
    session.pending_end_reason = state.pending_end_reason.value if state.pending_end_reason else None
    session.timer_at = state.timer_at
    session.timer_event = state.timer_event.value if state.timer_event else ""
    session.phase_deadline_at = state.deadline_at


def _time_in_phase(before: machine.State, event: EventInput) -> None:
    """The time since the session's previous event was spent in the phase it was in: one sample
    per event, so the samples of a phase add up to all the time sessions spent in it."""
    if before.last_event_time is not None:
        seconds = max(0.0, (event.at - before.last_event_time).total_seconds())
        metrics.observe_on_commit(metrics.SESSION_PHASE_SECONDS, seconds, before.phase.value)


@dataclass
class Outcome:
    session: AISession
    next: dict[str, Any]


@dataclass
class Run:
    """One chain of events on one locked session."""

    session: AISession
    actor: Principal
    now: datetime
    queue: deque[EventInput] = field(default_factory=deque)
    # What this chain already knows, so each event costs as few statements as it can.
    _seq: int | None = None
    _ai: SessionMessage | None = None
    user_commands: list[dict[str, Any]] | None = None
    action_message: dict[str, Any] | None = None  # ACTIONS_EXECUTED as recorded (ActionResult rows)
    # The user's commands as the session stood when the chain began (read for a batch of
    # activations at once); good only until the chain adds a message.
    commands_at_start: list[dict[str, Any]] | None = None

    # --- driving ---------------------------------------------------------------------------

    def apply(self, event: Event, payload: dict[str, Any]) -> None:
        armed = self.session.phase_deadline_at
        self.advance(event, payload)
        rows.update(self.session, SAVED_FIELDS)  # save(update_fields=...), without compiling it every event
        self.arm_deadline(armed)

    def advance(self, event: Event, payload: dict[str, Any]) -> None:
        """Apply the event and the chain it sets off to the session in memory, carrying out the
        effects; the caller stores the session's state."""
        limits = session_limits.for_agent(self.session.agent)  # the agent's manifest, else the settings
        self.queue.append(EventInput(event, self.now, payload))
        for _ in range(MAX_CHAIN):
            if not self.queue:
                break
            current = self.queue.popleft()
            before = to_state(self.session)
            try:
                after, asked = machine.transition(before, current, limits)
            except machine.TransitionRefused as exc:
                raise Conflict(str(exc), phase=exc.phase.value, event=exc.event.value) from exc
            except machine.InvalidPayload as exc:
                loc = ["body", "payload", exc.field]
                raise InvalidInput(str(exc), errors=[{"loc": loc, "msg": str(exc), "type": "invalid"}]) from exc
            _store_state(self.session, after)
            _time_in_phase(before, current)
            for item in asked:
                effects.HANDLERS[item.kind](self, before, current, item.data)
        else:
            raise RuntimeError(f"session {self.session.pk}: more than {MAX_CHAIN} chained events")

    def arm_deadline(self, armed: datetime | None) -> None:
        """Once the state is stored: a deadline other than the one ``armed`` before the chain gets its timer."""
        deadline = self.session.phase_deadline_at
        if deadline is not None and deadline != armed:
            # The deadline's own timer; the scheduler tick finds overdue sessions if it is lost.
            session_id = str(self.session.pk)
            dispatch.after_commit("sessions.phase_deadline", session_id, deadline.isoformat(), eta=deadline)

    def follow(self, event: Event, **payload: Any) -> None:
        """An event the server raises itself, applied after the current one in the same chain."""
        self.queue.append(EventInput(event, self.now, payload))

    # --- messages (what the effects add to the session) ------------------------------------

    def add(self, sender: str, **fields: Any) -> SessionMessage:
        if self._seq is None:  # the session row is locked: nobody else appends meanwhile
            self._seq = (rows.fetch_one(_LAST_SEQ_SQL, [self.session.pk]) or (0,))[0]
        self._seq += 1
        self.commands_at_start = None
        message = SessionMessage.objects.create(
            session=self.session, seq=self._seq, timestamp=self.now, sender=sender, **fields
        )
        if sender == "AI" and message.ai_message_json is not None:
            self._ai = message
        return message

    def add_system(self, message: dict[str, Any], **fields: Any) -> SessionMessage:
        return self.add("SYSTEM", system_message=message, system_type=message["type"], **fields)

    def last_ai(self) -> SessionMessage | None:
        """The latest answer of the model, read once per chain."""
        if self._ai is None:
            self._ai = (
                self.session.messages.filter(sender="AI", ai_message_json__isnull=False, removed_at__isnull=True)
                .order_by("-seq")
                .first()
            )
        return self._ai


def _check_actor(session: AISession, actor: Principal, event: Event, *, as_reviewer: bool) -> None:
    """An agent drives only its own session, and only with the events an agent emits: a
    reviewer's answer (ValidationReceived, CommunicationResponseReceived) comes from the inbox,
    and the platform's own events from the platform, never from an agent key.

    ``as_reviewer`` (passed by the inbox only, never by an edge) carries the authority of a review
    decision: governance.reviews checked the decider's review permission, so a reviewer without
    the sessions' change permission may emit the reviewer's events, and only those."""
    if as_reviewer:
        if actor.user is None or machine.EMITTERS[event] != machine.Emitter.REVIEWER:
            raise Forbidden(f"{event.value} is not a reviewer's answer.", event=event.value)
        return
    if actor.agent is not None:
        if actor.agent.pk != session.agent_id:
            raise Forbidden("This session belongs to another agent.")
        if event not in machine.AGENT_EVENTS:
            emitter = machine.EMITTERS[event].value
            raise Forbidden(
                f"{event.value} is emitted by the {emitter}, not by an agent.", event=event.value, emitter=emitter
            )
    elif actor.user is not None and not actor.has_perm("ai_sessions.change_aisession"):
        raise Forbidden("Your account may not drive sessions.")


def apply_event(
    session_id: UUID | str,
    event: str,
    payload: dict[str, Any] | None = None,
    *,
    actor: Principal,
    now: datetime | None = None,
    as_reviewer: bool = False,
) -> Outcome:
    """Apply one event (and whatever it sets off on the server) in one transaction. With
    ``as_reviewer``, ``actor`` is the user whose review decision the event carries (sessions/inbox.py):
    the session's audit trail names them as the one who moved it on."""
    try:
        kind = Event(event)
    except ValueError as exc:
        names = ", ".join(e.value for e in Event)
        raise InvalidInput(
            f"unknown event {event!r}", errors=[{"loc": ["body", "type"], "msg": f"one of {names}", "type": "enum"}]
        ) from exc
    payload = payload or {}
    try:
        # Not durable: a reviewer's decision applies its answer inside the decision's transaction.
        with transaction.atomic():
            session = _locked_session(session_id)
            _check_actor(session, actor, kind, as_reviewer=as_reviewer)
            _check_payload(kind, payload)
            run = Run(session=session, actor=actor, now=now or timezone.now())
            reports_actions = kind in (Event.ACTIONS_EXECUTED, Event.ACTION_FAILURE_OCCURRED)
            if reports_actions and session.phase == Phase.EXECUTING_ACTIONS:
                payload = _with_action_outcome(run, payload)
            review_item = (session.waiting_context or {}).get("reviewItemId")
            run.apply(kind, payload)
            if as_reviewer:
                record(
                    actor=actor,
                    action=AuditAction.SESSION_REVIEW_APPLIED,
                    target=session,
                    event=kind.value,
                    review_item=review_item,
                    phase=session.phase,
                )
    except IntegrityError as exc:
        # The partial unique index: another session of the agent became active first (an
        # operator's activation, a race with the scheduler). A conflict, never a 500.
        if "one_active_session_per_agent" not in str(exc):
            raise
        raise Conflict(
            "The agent already has an active session; this one waits for the slot.",
            phase=session.phase,
            event=kind.value,
        ) from exc
    return Outcome(session=session, next=next_action(session))


@functools.cache
def _locked_session_sql(many: bool = False) -> str:
    """The session row locked for the chain, with its agent and its automation's provider profile
    (the machine reads them), in one statement written once (governance/kernel/rows.py): the ORM
    took longer compiling this join than the database takes running it, on every event. With
    ``many``, the rows of an array of ids, locked in id order (two batches never deadlock)."""
    quote = connection.ops.quote_name

    def table(model: type[Model], alias: str) -> str:
        return f"{quote(model._meta.db_table)} {alias}"

    return (
        f"SELECT {rows.select_list(AISession, 's')}, {rows.select_list(Agent, 'a')},"
        f" {rows.select_list(Automation, 'au')}, {rows.select_list(ProviderProfile, 'p')}"
        f" FROM {table(AISession, 's')} JOIN {table(Agent, 'a')} ON a.id = s.agent_id"
        f" LEFT JOIN {table(Automation, 'au')} ON au.id = s.automation_id"
        f" LEFT JOIN {table(ProviderProfile, 'p')} ON p.id = au.profile_id"
        + (" WHERE s.session_id = ANY(%s) ORDER BY s.session_id" if many else " WHERE s.session_id = %s")
        + " FOR UPDATE OF s"
    )


def _locked_session(session_id: UUID | str) -> AISession:
    """``select_for_update(of=("self",)).select_related("agent", "automation__profile").get(pk=...)``:
    the same row, lock, instances and errors (DoesNotExist, ValidationError for a malformed id)."""
    row = rows.fetch_one(_locked_session_sql(), [AISession._meta.pk.to_python(session_id)])
    if row is None:
        raise AISession.DoesNotExist("AISession matching query does not exist.")
    return _session_of(row)


def _session_of(row: tuple[Any, ...]) -> AISession:
    session, agent, automation, profile = rows.instances(row, AISession, Agent, Automation, ProviderProfile)
    session.agent = agent
    if automation is not None:
        automation.profile = profile
    session.automation = automation
    return session


# Where each session's messages stand: its last seq, and the user messages after the last one
# that was not the user's (whose commands an activation's enrichments run), in order.
_MESSAGES_AT_START_SQL = (
    "SELECT l.session_id, l.last_seq, m.rich_content"
    f" FROM (SELECT session_id, max(seq) AS last_seq, max(seq) FILTER (WHERE sender <> 'USER') AS last_other"
    f" FROM {connection.ops.quote_name(SessionMessage._meta.db_table)} WHERE session_id = ANY(%s)"
    " GROUP BY session_id) l"
    f" LEFT JOIN {connection.ops.quote_name(SessionMessage._meta.db_table)} m ON m.session_id = l.session_id"
    " AND m.sender = 'USER' AND m.rich_content IS NOT NULL AND m.seq > coalesce(l.last_other, 0)"
    " ORDER BY l.session_id, m.seq"
)


def activate_many(session_ids: list[UUID], *, now: datetime) -> list[AISession]:
    """SessionActivationRequested for sessions of distinct agents, as ``apply_event`` applies it
    to each, in a fixed number of statements for the whole batch: the rows locked in one, where
    their messages stand read in one, the states stored in one pipelined round trip. For the
    scheduler, which holds the agents' locks and has seen their slots free: a refused transition
    or a second active session raises, and the caller rolls the batch back."""
    with connection.cursor() as cursor:
        cursor.execute(_locked_session_sql(many=True), [session_ids])
        sessions = [_session_of(row) for row in cursor.fetchall()]
        cursor.execute(_MESSAGES_AT_START_SQL, [session_ids])
        at_start: dict[UUID, tuple[int, list[dict[str, Any]]]] = {}
        for session_id, last_seq, rich in cursor.fetchall():
            commands = at_start.setdefault(session_id, (last_seq, []))[1]
            if rich is not None:
                commands.extend(json.loads(rich).get("dataCommands", []))  # jsonb arrives as text (rows.py)
    runs = []
    for session in sessions:
        last_seq, commands = at_start.get(session.pk, (0, []))
        run = Run(session=session, actor=SYSTEM, now=now, _seq=last_seq, commands_at_start=commands)
        armed = session.phase_deadline_at
        run.advance(Event.SESSION_ACTIVATION_REQUESTED, {})
        runs.append((run, armed))
    rows.update_many([run.session for run, _ in runs], SAVED_FIELDS)
    for run, armed in runs:
        run.arm_deadline(armed)
    return sessions


def _check_payload(kind: Event, payload: Any) -> None:
    """Every event's payload against its schema (sessions/schemas.py): 422 with the path."""
    try:
        EVENT_PAYLOADS[kind.value].model_validate(payload)
    except ValidationError as exc:
        errors = [
            {"loc": ["body", "payload", *error["loc"]], "msg": error["msg"], "type": error["type"]}
            for error in exc.errors(include_url=False, include_input=False)
        ]
        raise InvalidInput(f"invalid {kind.value} payload", errors=errors) from None


def _with_action_outcome(run: Run, payload: dict[str, Any]) -> dict[str, Any]:
    """Record the reported action results once each (ActionResult: unique session + command id;
    the first recorded result of an id stands), then judge the outcome from what is recorded:
    success only when there is at least one action and every one is SUCCESS or CACHED. An agent's
    ``allSuccess: false`` can make it a failure; its ``true`` never overrides a FAILED result.
    keepControl comes from the AI message, not the agent."""
    last = run.last_ai()
    ai = (last.ai_message or {}) if last else {}
    commands = ai.get("actionCommands") or []
    reported = executor.record_agent_results(
        commands, payload.get("results") or [], kind=SystemMessageType.ACTIONS_EXECUTED
    )
    expected = {command["id"] for command in commands}
    ActionResult.objects.bulk_create(
        [
            ActionResult(
                session=run.session,
                command_id=result["commandId"],
                ai_message=last,
                status=result["status"],
                result=result,
                recorded_at=run.now,
            )
            for result in reported["commandResults"]
            if result.get("commandId") in expected
        ],
        ignore_conflicts=True,
    )
    recorded = {row.command_id: row.result for row in run.session.action_results.filter(command_id__in=expected)}
    ordered = [recorded[command["id"]] for command in commands if command["id"] in recorded]
    rejected = [r for r in reported["commandResults"] if r.get("commandId") not in expected]
    run.action_message = system_message(SystemMessageType.ACTIONS_EXECUTED, ordered + rejected)
    success = bool(ordered) and all(r["status"] in ("SUCCESS", "CACHED") for r in ordered)
    success = success and payload.get("allSuccess") is not False
    return {**payload, "allSuccess": success, "keepControl": bool(ai.get("keepControl"))}


def next_action(session: AISession) -> dict[str, Any]:
    """What the agent should do now, given where the session rests."""
    if not session.is_active:
        return {"action": "none", "endReason": session.end_reason}
    phase = Phase(session.phase)
    if phase == Phase.CALLING_AI:
        if session.automation_id and session.automation.provider:
            return {"action": "wait", "reason": "the server calls the model (hosted session)"}
        return {"action": "call_ai", "prompt": f"/api/v1/sessions/{session.pk}/prompt"}
    if phase == Phase.EXECUTING_ACTIONS and (session.waiting_context or {}).get("type") == "ActionOutcomes":
        # Resumed mid-execution: report what became of these; never run them again.
        return {"action": "report_action_outcomes", "commandIds": session.waiting_context["commandIds"]}
    if phase == Phase.EXECUTING_ACTIONS:
        ai = session.messages.filter(sender="AI", ai_message__isnull=False).order_by("-seq").first()
        return {"action": "execute_actions", "commands": (ai.ai_message or {}).get("actionCommands", []) if ai else []}
    if phase == Phase.EXECUTING_DATA_QUERIES:
        return {"action": "execute_data_queries", "commands": (session.waiting_context or {}).get("commands", [])}
    if phase == Phase.WAITING_VALIDATION:
        return {"action": "wait_for_validation", "reviewItemId": (session.waiting_context or {}).get("reviewItemId")}
    if phase == Phase.WAITING_COMMUNICATION_RESPONSE:
        return {"action": "wait_for_response", "reviewItemId": (session.waiting_context or {}).get("reviewItemId")}
    if phase == Phase.IDLE:
        return {"action": "wait_for_user"}
    return {"action": "wait", "until": session.timer_at.isoformat() if session.timer_at else None}
