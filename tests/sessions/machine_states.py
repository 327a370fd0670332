"""States, events and effects of the AI session state machine, shared by the machine tests
(test_machine*.py): a plausible state for each phase, and a fake processor that plays a session
through the pure transitions, so each test states only what it is about."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sessions.machine import Effect, EndReason, Event, EventInput, Limits, Phase, SessionType, State, transition

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
STEP = timedelta(seconds=1)
TYPES = (SessionType.CHAT, SessionType.AUTOMATION)
RUNNING = [p for p in Phase if p not in (Phase.AWAITING_SESSION_CLOSURE, Phase.COMPLETED)]
NON_TERMINAL = [p for p in Phase if p is not Phase.COMPLETED]
# Seed section 5: work under way, never timed out by the watchdog.
ACTIVE_PHASES = [
    Phase.EXECUTING_ENRICHMENTS,
    Phase.CALLING_AI,
    Phase.PARSING_AI_RESPONSE,
    Phase.EXECUTING_DATA_QUERIES,
    Phase.EXECUTING_ACTIONS,
    Phase.RETRYING_AFTER_FORMAT_ERROR,
    Phase.RETRYING_AFTER_ACTION_FAILURE,
]
# The only events that are a person's answer (they move last_user_interaction_time).
USER_EVENTS = {Event.USER_MESSAGE_SENT, Event.VALIDATION_RECEIVED, Event.COMMUNICATION_RESPONSE_RECEIVED}

DATA = [{"type": "TOOL_DATA", "params": {"tool": "mood"}}]
ACTIONS = [{"type": "CREATE_DATA", "params": {"tool": "mood", "value": 7}}]
MODULE = {"type": "MultipleChoice", "data": {"question": "Which one?", "options": ["a", "b"]}}
VALIDATION_CONTEXT = {"actions": ["create an entry in mood"], "reasons": ["session requires validation"]}


def make_state(phase: Phase, session_type: SessionType, *, active: bool = True, **overrides: Any) -> State:
    """A plausible state for ``phase``: waiting contexts, timers and end reasons where the phase has them."""
    values: dict[str, Any] = {
        "session_type": session_type,
        "phase": phase,
        "is_active": active,
        "total_roundtrips": 3,
        "last_event_time": T0,
        "last_user_interaction_time": T0 - timedelta(minutes=1) if session_type == SessionType.CHAT else None,
    }
    if phase in ACTIVE_PHASES:
        values["deadline_at"] = T0  # due at T0 + STEP, when the test's events happen
    if phase is Phase.WAITING_VALIDATION:
        values["waiting_context"] = {"type": "Validation", "validationContext": VALIDATION_CONTEXT}
    elif phase is Phase.WAITING_COMMUNICATION_RESPONSE:
        values["waiting_context"] = {"type": "Communication", "communicationModule": MODULE}
    elif phase is Phase.WAITING_COMPLETION_CONFIRMATION:
        at = T0 + timedelta(seconds=5)
        values["waiting_context"] = {
            "type": "CompletionConfirmation",
            "aiMessageId": "m-1",
            "scheduledConfirmationTime": at.isoformat(),
        }
        values.update(timer_at=at, timer_event=Event.COMPLETION_CONFIRMED)
    elif phase is Phase.WAITING_NETWORK_RETRY:
        values.update(timer_at=T0 + timedelta(seconds=30), timer_event=Event.NETWORK_AVAILABLE)
    elif phase is Phase.AWAITING_SESSION_CLOSURE:
        values.update(
            pending_end_reason=EndReason.COMPLETED,
            timer_at=T0 + timedelta(seconds=5),
            timer_event=Event.SESSION_COMPLETED,
        )
    elif phase is Phase.COMPLETED:
        values.update(is_active=False, end_reason=EndReason.COMPLETED)
    values.update(overrides)
    return State(**values)


def ev(event: Event, at: datetime = T0 + STEP, **payload: Any) -> EventInput:
    return EventInput(event, at, payload)


def kinds(effects: list[Effect]) -> list[str]:
    return [e.kind for e in effects]


def messages(effects: list[Effect]) -> list[str]:
    """The types of the system messages the transition asks the processor to write."""
    return [e.data["type"] for e in effects if e.kind == "system_message"]


# --- A fake processor, for whole runs -------------------------------------------------------------

PARSE_ERROR = "parse error"  # what the script returns for an unreadable answer
NETWORK_DOWN = "network down"  # what the script returns for a call that cannot reach the provider


@dataclass
class Loop:
    """A fake processor: it answers each transition's effects with the event they lead to.

    ``script(n)`` gives the outcome of the n-th AI call (1-based): a parsed answer, PARSE_ERROR or NETWORK_DOWN.
    """

    session_type: SessionType
    script: Callable[[int], Any] = lambda n: {}
    limits: Limits = field(default_factory=Limits)
    state: State = field(init=False)
    now: datetime = T0
    calls: int = 0
    last_effects: list[Effect] = field(default_factory=list)
    history: list[tuple[State, EventInput, State, list[Effect]]] = field(default_factory=list)
    _answer: Any = None

    def __post_init__(self) -> None:
        self.state = State(self.session_type)

    def send(self, event: Event, at: datetime | None = None, **payload: Any) -> State:
        self.now = at or self.now + STEP
        before, incoming = self.state, EventInput(event, self.now, payload)
        self.state, self.last_effects = transition(before, incoming, self.limits)
        self.history.append((before, incoming, self.state, self.last_effects))
        return self.state

    def _next(self) -> tuple[Event, dict[str, Any], datetime | None] | None:
        todo = kinds(self.last_effects)
        calling = "call_ai" in todo or ("resume" in todo and self.state.phase is Phase.CALLING_AI)
        if "execute_enrichments" in todo:
            return Event.ENRICHMENTS_EXECUTED, {}, None
        if calling:
            self.calls += 1
            self._answer = self.script(self.calls)
            if self._answer == NETWORK_DOWN:
                return Event.NETWORK_ERROR_OCCURRED, {}, None
            return Event.AI_RESPONSE_RECEIVED, {}, None
        if "parse_response" in todo:
            if self._answer == PARSE_ERROR:
                return Event.PARSE_ERROR_OCCURRED, {}, None
            return Event.AI_RESPONSE_PARSED, dict(self._answer), None
        if "execute_data_queries" in todo:
            return Event.DATA_QUERIES_EXECUTED, {}, None
        if "execute_actions" in todo:
            return Event.ACTIONS_EXECUTED, {"allSuccess": True, **self._answer}, None
        if "retry" in todo:
            return Event.RETRY_SCHEDULED, {}, None
        if "schedule" in todo:
            assert self.state.timer_event is not None, "a schedule effect always comes with a timer"
            return self.state.timer_event, {}, self.state.timer_at
        return None

    def follow(self, until: Callable[[Loop], bool] = lambda loop: False, max_steps: int = 10_000) -> State:
        """Play the processor until nobody but a person (or the scheduler) can move the session."""
        for _ in range(max_steps):
            if until(self):
                return self.state
            step = self._next()
            if step is None:
                return self.state
            event, payload, at = step
            self.send(event, at, **payload)
        raise AssertionError("the loop never settled")

    def count(self, event: Event) -> int:
        return sum(1 for _, incoming, _, _ in self.history if incoming.type is event)

    def all_messages(self) -> list[str]:
        return [m for *_, effects in self.history for m in messages(effects)]


def busy_model(n: int) -> Any:
    """A model that never says `completed`: queries, acts, mumbles and sometimes answers garbage."""
    return [{"dataCommands": DATA}, {"actionCommands": ACTIONS}, PARSE_ERROR, {"preText": "hmm"}][n % 4]
