"""The AI session state machine (seed 003): pure transitions, no Django, no I/O.

``transition(state, event, limits)`` returns the next state and the effects the processor must
carry out (write messages, run commands, schedule timers). Any (phase, event) pair outside the
table is refused with :class:`TransitionRefused`, which the API turns into a 409 naming both.

Decisions where the seed is silent or contradicts itself are marked "Decision:" below.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any


class Phase(StrEnum):
    IDLE = "IDLE"
    EXECUTING_ENRICHMENTS = "EXECUTING_ENRICHMENTS"
    CALLING_AI = "CALLING_AI"
    PARSING_AI_RESPONSE = "PARSING_AI_RESPONSE"
    WAITING_VALIDATION = "WAITING_VALIDATION"
    WAITING_COMMUNICATION_RESPONSE = "WAITING_COMMUNICATION_RESPONSE"
    EXECUTING_DATA_QUERIES = "EXECUTING_DATA_QUERIES"
    EXECUTING_ACTIONS = "EXECUTING_ACTIONS"
    WAITING_COMPLETION_CONFIRMATION = "WAITING_COMPLETION_CONFIRMATION"
    WAITING_NETWORK_RETRY = "WAITING_NETWORK_RETRY"
    RETRYING_AFTER_FORMAT_ERROR = "RETRYING_AFTER_FORMAT_ERROR"
    RETRYING_AFTER_ACTION_FAILURE = "RETRYING_AFTER_ACTION_FAILURE"
    AWAITING_SESSION_CLOSURE = "AWAITING_SESSION_CLOSURE"
    COMPLETED = "COMPLETED"


class Event(StrEnum):
    SESSION_ACTIVATION_REQUESTED = "SessionActivationRequested"
    USER_MESSAGE_SENT = "UserMessageSent"
    ENRICHMENTS_EXECUTED = "EnrichmentsExecuted"
    AI_RESPONSE_RECEIVED = "AIResponseReceived"
    AI_RESPONSE_PARSED = "AIResponseParsed"
    VALIDATION_RECEIVED = "ValidationReceived"
    COMMUNICATION_RESPONSE_RECEIVED = "CommunicationResponseReceived"
    DATA_QUERIES_EXECUTED = "DataQueriesExecuted"
    ACTIONS_EXECUTED = "ActionsExecuted"
    COMPLETION_CONFIRMED = "CompletionConfirmed"
    COMPLETION_REJECTED = "CompletionRejected"
    NETWORK_ERROR_OCCURRED = "NetworkErrorOccurred"
    PARSE_ERROR_OCCURRED = "ParseErrorOccurred"
    ACTION_FAILURE_OCCURRED = "ActionFailureOccurred"
    NETWORK_RETRY_SCHEDULED = "NetworkRetryScheduled"
    RETRY_SCHEDULED = "RetryScheduled"
    NETWORK_AVAILABLE = "NetworkAvailable"
    SYSTEM_ERROR_OCCURRED = "SystemErrorOccurred"
    SESSION_COMPLETED = "SessionCompleted"
    SCHEDULER_HEARTBEAT = "SchedulerHeartbeat"
    PHASE_DEADLINE_PASSED = "PhaseDeadlinePassed"


class Emitter(StrEnum):
    """Who may emit an event (seed 003): the agent driving the session, a reviewer answering in
    the inbox, the platform following its own chain (parsing, enrichments, timers), or the
    scheduler (activation, heartbeat, completion)."""

    AGENT = "agent"
    REVIEWER = "reviewer"
    PLATFORM = "platform"
    SYSTEM = "system"


EMITTERS: dict[Event, Emitter] = {
    Event.SESSION_ACTIVATION_REQUESTED: Emitter.SYSTEM,
    Event.USER_MESSAGE_SENT: Emitter.AGENT,  # the agent relays its user's message
    Event.ENRICHMENTS_EXECUTED: Emitter.PLATFORM,
    Event.AI_RESPONSE_RECEIVED: Emitter.AGENT,  # the agent called its model
    Event.AI_RESPONSE_PARSED: Emitter.PLATFORM,
    Event.VALIDATION_RECEIVED: Emitter.REVIEWER,
    Event.COMMUNICATION_RESPONSE_RECEIVED: Emitter.REVIEWER,
    Event.DATA_QUERIES_EXECUTED: Emitter.AGENT,  # delegated queries run on the agent
    Event.ACTIONS_EXECUTED: Emitter.AGENT,  # actions run on the agent
    Event.COMPLETION_CONFIRMED: Emitter.PLATFORM,  # the confirmation timer
    Event.COMPLETION_REJECTED: Emitter.PLATFORM,
    Event.NETWORK_ERROR_OCCURRED: Emitter.AGENT,  # the agent could not reach its model
    Event.PARSE_ERROR_OCCURRED: Emitter.PLATFORM,  # the platform parses the answer
    Event.ACTION_FAILURE_OCCURRED: Emitter.AGENT,
    Event.NETWORK_RETRY_SCHEDULED: Emitter.PLATFORM,
    Event.RETRY_SCHEDULED: Emitter.PLATFORM,
    Event.NETWORK_AVAILABLE: Emitter.PLATFORM,  # the retry timer
    # The agent calls its model: a provider it cannot use (configuration, refusal) or a failure on
    # its side is its to report, so it can end its session in ERROR; the platform reports its own.
    Event.SYSTEM_ERROR_OCCURRED: Emitter.AGENT,
    Event.SESSION_COMPLETED: Emitter.SYSTEM,
    Event.SCHEDULER_HEARTBEAT: Emitter.SYSTEM,
    Event.PHASE_DEADLINE_PASSED: Emitter.SYSTEM,  # the phase's deadline timer, or the tick as its backstop
}
AGENT_EVENTS = frozenset(event for event, emitter in EMITTERS.items() if emitter == Emitter.AGENT)


class SessionType(StrEnum):
    CHAT = "CHAT"
    SEED = "SEED"
    AUTOMATION = "AUTOMATION"


class EndReason(StrEnum):
    COMPLETED = "COMPLETED"
    LIMIT_REACHED = "LIMIT_REACHED"
    ERROR = "ERROR"
    TIMEOUT = "TIMEOUT"
    CANCELLED = "CANCELLED"
    SUSPENDED = "SUSPENDED"
    NETWORK_ERROR = "NETWORK_ERROR"


class SystemMessageType(StrEnum):
    DATA_ADDED = "DATA_ADDED"
    ACTIONS_EXECUTED = "ACTIONS_EXECUTED"
    LIMIT_REACHED = "LIMIT_REACHED"
    FORMAT_ERROR = "FORMAT_ERROR"
    NETWORK_ERROR = "NETWORK_ERROR"
    SESSION_TIMEOUT = "SESSION_TIMEOUT"


# Phases where work is under way: the watchdog never times these out (seed section 5).
ACTIVE_PHASES = frozenset(
    {
        Phase.EXECUTING_ENRICHMENTS,
        Phase.CALLING_AI,
        Phase.PARSING_AI_RESPONSE,
        Phase.EXECUTING_DATA_QUERIES,
        Phase.EXECUTING_ACTIONS,
        Phase.RETRYING_AFTER_FORMAT_ERROR,
        Phase.RETRYING_AFTER_ACTION_FAILURE,
    }
)
# Phases that wait for a person: inactivity counts from the last user interaction.
WAITING_PHASES = frozenset(
    {Phase.WAITING_VALIDATION, Phase.WAITING_COMMUNICATION_RESPONSE, Phase.WAITING_COMPLETION_CONFIRMATION}
)
# Closing is not inactivity, and a network wait is the provider's fault, not the session's.
_NEVER_TIMED_OUT = ACTIVE_PHASES | {Phase.WAITING_NETWORK_RETRY, Phase.AWAITING_SESSION_CLOSURE}
RESUMABLE_END_REASONS = frozenset({EndReason.SUSPENDED, EndReason.NETWORK_ERROR})
CLOSURE_DELAY = timedelta(seconds=5)
NETWORK_RETRY_DELAY = timedelta(seconds=30)
MAX_NETWORK_RETRY_DELAY = timedelta(hours=1)
COMPLETION_CONFIRMATION_DELAY = timedelta(seconds=5)
# Every active phase has a deadline (SESSION_PHASE_DEADLINES overrides these). CALLING_AI is the
# seed's 2-minute HTTP timeout; the agent-run phases (delegated queries, actions) get longer.
DEFAULT_PHASE_DEADLINES: dict[Phase, timedelta] = {
    Phase.EXECUTING_ENRICHMENTS: timedelta(seconds=60),
    Phase.CALLING_AI: timedelta(seconds=120),
    Phase.PARSING_AI_RESPONSE: timedelta(seconds=60),
    Phase.EXECUTING_DATA_QUERIES: timedelta(seconds=600),
    Phase.EXECUTING_ACTIONS: timedelta(seconds=600),
    Phase.RETRYING_AFTER_FORMAT_ERROR: timedelta(seconds=60),
    Phase.RETRYING_AFTER_ACTION_FAILURE: timedelta(seconds=60),
}


def parse_phase_deadlines(text: str) -> dict[Phase, timedelta]:
    """``"CALLING_AI=120,EXECUTING_ACTIONS=600"`` (seconds) over the defaults; only active phases
    have deadlines, and each is a positive whole number of seconds. ValueError says what is wrong."""
    deadlines = dict(DEFAULT_PHASE_DEADLINES)
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, value = (piece.strip() for piece in item.partition("="))
        if not sep or name not in Phase.__members__ or Phase(name) not in ACTIVE_PHASES:
            phases = ", ".join(sorted(p.value for p in ACTIVE_PHASES))
            raise ValueError(f"{item!r}: expected PHASE=SECONDS with PHASE one of {phases}")
        if not value.isdigit() or int(value) <= 0:
            raise ValueError(f"{item!r}: the deadline must be a positive whole number of seconds")
        deadlines[Phase(name)] = timedelta(seconds=int(value))
    return deadlines


@dataclass(frozen=True)
class Limits:
    """AILimitsConfig: CHAT is unlimited (None), AUTOMATION stops after 20 round trips."""

    chat_max_autonomous_roundtrips: int | None = None
    automation_max_autonomous_roundtrips: int | None = 20
    inactivity_timeout: timedelta = timedelta(minutes=30)
    phase_deadlines: dict[Phase, timedelta] = field(default_factory=lambda: dict(DEFAULT_PHASE_DEADLINES))

    def max_roundtrips(self, session_type: SessionType) -> int | None:
        if session_type == SessionType.AUTOMATION:
            return self.automation_max_autonomous_roundtrips
        return self.chat_max_autonomous_roundtrips


@dataclass(frozen=True)
class State:
    """AIState plus what the machine needs to decide (the session's type and activity)."""

    session_type: SessionType
    phase: Phase = Phase.IDLE
    total_roundtrips: int = 0
    last_event_time: datetime | None = None
    last_user_interaction_time: datetime | None = None
    waiting_context: dict[str, Any] | None = None
    is_active: bool = False
    end_reason: EndReason | None = None
    pending_end_reason: EndReason | None = None
    timer_at: datetime | None = None  # when the phase's own timer fires (retry, closure, confirmation)
    timer_event: Event | None = None  # what the timer emits then
    deadline_at: datetime | None = None  # when the active phase's work is overdue
    hosted_calls: bool = False  # the server calls the model (hosted automation)
    hosted_actions: bool = False  # the server stands in for the agent's actions (scripted demo)


class EffectKind(StrEnum):
    """What a transition asks the processor to do; each has exactly one handler
    (sessions/effects.py, HANDLERS)."""

    ABANDON_WAITING = "abandon_waiting"
    CALL_AI = "call_ai"
    CHECK_COMPLETION = "check_completion"
    EXECUTE_ACTIONS = "execute_actions"
    EXECUTE_DATA_QUERIES = "execute_data_queries"
    EXECUTE_ENRICHMENTS = "execute_enrichments"
    PARSE_RESPONSE = "parse_response"
    POST_TEXT = "post_text"
    RECORD_RESULTS = "record_results"
    REMOVE_FALLBACK = "remove_fallback"
    REQUEST_COMMUNICATION = "request_communication"
    REQUEST_VALIDATION = "request_validation"
    RESUME = "resume"
    RETRY = "retry"
    SCHEDULE = "schedule"
    SESSION_RELEASED = "session_released"
    STORE_AI_RESPONSE = "store_ai_response"
    STORE_COMMUNICATION_RESPONSE = "store_communication_response"
    STORE_USER_MESSAGE = "store_user_message"
    SYSTEM_MESSAGE = "system_message"


@dataclass(frozen=True)
class Effect:
    """Something the processor does after the transition, inside the same transaction."""

    kind: EffectKind
    data: dict[str, Any] = field(default_factory=dict)


def effect(kind: EffectKind, **data: Any) -> Effect:
    return Effect(kind, data)


class TransitionRefused(Exception):
    def __init__(self, phase: Phase, event: Event, reason: str = "") -> None:
        self.phase, self.event = phase, event
        base = f"{event.value} is not allowed in phase {phase.value}"
        super().__init__(f"{base}: {reason}" if reason else base)


class InvalidPayload(ValueError):
    """The event is allowed but its payload is not usable; ``field`` names the payload key."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message)


@dataclass(frozen=True)
class EventInput:
    type: Event
    at: datetime
    payload: dict[str, Any] = field(default_factory=dict)


Handler = Callable[[State, EventInput, Limits], tuple[State, list[Effect]]]


# --- helpers ---------------------------------------------------------------------------------


def _close(state: State, event: EventInput, reason: EndReason, *effects: Effect) -> tuple[State, list[Effect]]:
    """Every automatic end goes through AWAITING_SESSION_CLOSURE for 5 s (seed section 6)."""
    new = replace(
        state,
        phase=Phase.AWAITING_SESSION_CLOSURE,
        pending_end_reason=reason,
        waiting_context=None,
        **_timer(event.at + CLOSURE_DELAY, Event.SESSION_COMPLETED),
    )
    return new, [*effects, effect(EffectKind.SCHEDULE)]


def _timer(at: datetime | None, fires: Event | None) -> dict[str, Any]:
    """The phase's timer; the processor schedules it, and the scheduler tick is the backstop."""
    return {"timer_at": at, "timer_event": fires}


def _call_ai(state: State, event: EventInput, limits: Limits, *effects: Effect) -> tuple[State, list[Effect]]:
    """Go (back) to the model, unless the autonomous round-trip limit is reached."""
    limit = limits.max_roundtrips(state.session_type)
    if limit is not None and state.total_roundtrips >= limit:
        summary = f"Limit of {limit} autonomous round trips reached."
        message = effect(EffectKind.SYSTEM_MESSAGE, type=SystemMessageType.LIMIT_REACHED.value, summary=summary)
        if state.session_type == SessionType.AUTOMATION:
            return _close(state, event, EndReason.LIMIT_REACHED, *effects, message)
        # A CHAT limit (only if configured) waits for the user instead of ending the session.
        return replace(state, phase=Phase.IDLE, waiting_context=None, **_timer(None, None)), [*effects, message]
    new = replace(state, phase=Phase.CALLING_AI, waiting_context=None, **_timer(None, None))
    return new, [*effects, effect(EffectKind.CALL_AI)]


def _is_chat(state: State) -> bool:
    return state.session_type == SessionType.CHAT


# --- handlers --------------------------------------------------------------------------------


def activate(state: State, event: EventInput, limits: Limits) -> tuple[State, list[Effect]]:
    """A new session starts, or a suspended / orphaned one resumes transparently where it was."""
    if state.is_active:
        raise TransitionRefused(state.phase, event.type, "the session is already active")
    if state.session_type == SessionType.SEED:
        raise TransitionRefused(state.phase, event.type, "a SEED session is a template and never runs")
    resumed = replace(state, is_active=True, end_reason=None)
    if state.phase == Phase.IDLE and state.session_type == SessionType.AUTOMATION:
        # The SEED messages were copied into the session: run their enrichments first.
        return replace(resumed, phase=Phase.EXECUTING_ENRICHMENTS), [effect(EffectKind.EXECUTE_ENRICHMENTS)]
    # Decision: a resumed session whose interrupted step was an AI call simply calls again.
    return resumed, [effect(EffectKind.RESUME)]


def user_message(state: State, event: EventInput, limits: Limits) -> tuple[State, list[Effect]]:
    """Decision: in CHAT a new user message also answers a pending validation/communication by
    abandoning it; the fallback message stays as the trace of what was not answered."""
    effects = [effect(EffectKind.STORE_USER_MESSAGE), effect(EffectKind.EXECUTE_ENRICHMENTS)]
    if state.phase in (Phase.WAITING_VALIDATION, Phase.WAITING_COMMUNICATION_RESPONSE):
        effects.insert(0, effect(EffectKind.ABANDON_WAITING))
    new = replace(
        state,
        phase=Phase.EXECUTING_ENRICHMENTS,
        waiting_context=None,
        last_user_interaction_time=event.at,
        **_timer(None, None),
    )
    return new, effects


def enrichments_executed(state: State, event: EventInput, limits: Limits) -> tuple[State, list[Effect]]:
    return _call_ai(state, event, limits)


def ai_response_received(state: State, event: EventInput, limits: Limits) -> tuple[State, list[Effect]]:
    """A completed round trip: the only place the counter moves (it is never reset)."""
    new = replace(state, phase=Phase.PARSING_AI_RESPONSE, total_roundtrips=state.total_roundtrips + 1)
    return new, [effect(EffectKind.STORE_AI_RESPONSE), effect(EffectKind.PARSE_RESPONSE)]


def ai_response_parsed(state: State, event: EventInput, limits: Limits) -> tuple[State, list[Effect]]:
    """The decision tree: completed? validation? communication? data queries? actions?"""
    parsed = event.payload
    automation = state.session_type == SessionType.AUTOMATION
    if automation and parsed.get("completed"):
        at = event.at + COMPLETION_CONFIRMATION_DELAY
        context = {
            "type": "CompletionConfirmation",
            "aiMessageId": parsed.get("aiMessageId"),
            "scheduledConfirmationTime": at.isoformat(),
        }
        new = replace(
            state,
            phase=Phase.WAITING_COMPLETION_CONFIRMATION,
            waiting_context=context,
            **_timer(at, Event.COMPLETION_CONFIRMED),
        )
        # The platform checks the claim (the processor emits CompletionRejected if it fails).
        return new, [effect(EffectKind.CHECK_COMPLETION), effect(EffectKind.SCHEDULE)]
    if parsed.get("validationRequired") and parsed.get("actionCommands"):
        context = {"type": "Validation", "validationContext": parsed.get("validationContext", {})}
        new = replace(state, phase=Phase.WAITING_VALIDATION, waiting_context=context)
        return new, [effect(EffectKind.REQUEST_VALIDATION)]
    if parsed.get("communicationModule") and not automation:
        # In AUTOMATION nobody is there to answer: the module is ignored (seed section 6), with
        # no error and no extra round trip; the rest of the answer is decided as if it were absent.
        context = {"type": "Communication", "communicationModule": parsed["communicationModule"]}
        new = replace(state, phase=Phase.WAITING_COMMUNICATION_RESPONSE, waiting_context=context)
        return new, [effect(EffectKind.REQUEST_COMMUNICATION)]
    if parsed.get("dataCommands"):
        return replace(state, phase=Phase.EXECUTING_DATA_QUERIES), [effect(EffectKind.EXECUTE_DATA_QUERIES)]
    if parsed.get("actionCommands"):
        return replace(state, phase=Phase.EXECUTING_ACTIONS), [effect(EffectKind.EXECUTE_ACTIONS)]
    if automation:
        # Decision: an AUTOMATION answer with nothing to do continues; the round-trip limit
        # stops a model that never says `completed`.
        return _call_ai(state, event, limits)
    return replace(state, phase=Phase.IDLE), []


def parse_error(state: State, event: EventInput, limits: Limits) -> tuple[State, list[Effect]]:
    """No limit on format errors: the model must correct itself (round trips still count)."""
    summary = event.payload.get("summary") or "The response was not valid JSON in the expected format."
    return replace(state, phase=Phase.RETRYING_AFTER_FORMAT_ERROR), [
        effect(EffectKind.SYSTEM_MESSAGE, type=SystemMessageType.FORMAT_ERROR.value, summary=summary),
        effect(EffectKind.RETRY),
    ]


def retry(state: State, event: EventInput, limits: Limits) -> tuple[State, list[Effect]]:
    return _call_ai(state, event, limits)


def validation_received(state: State, event: EventInput, limits: Limits) -> tuple[State, list[Effect]]:
    if event.payload.get("approved"):
        new = replace(state, phase=Phase.EXECUTING_ACTIONS, waiting_context=None, last_user_interaction_time=event.at)
        return new, [effect(EffectKind.REMOVE_FALLBACK), effect(EffectKind.EXECUTE_ACTIONS)]
    # Refused: the fallback message stays. Decision: CHAT returns to IDLE (a chat never closes by
    # itself); AUTOMATION tells the model its actions were refused and lets it adapt.
    refused = effect(
        EffectKind.SYSTEM_MESSAGE,
        type=SystemMessageType.ACTIONS_EXECUTED.value,
        summary="The requested actions were rejected by a reviewer; they were not run.",
    )
    new = replace(state, waiting_context=None, last_user_interaction_time=event.at)
    if _is_chat(state):
        return replace(new, phase=Phase.IDLE), [refused]
    return _call_ai(new, event, limits, refused)


def communication_response(state: State, event: EventInput, limits: Limits) -> tuple[State, list[Effect]]:
    new = replace(state, waiting_context=None, last_user_interaction_time=event.at)
    return _call_ai(
        new, event, limits, effect(EffectKind.REMOVE_FALLBACK), effect(EffectKind.STORE_COMMUNICATION_RESPONSE)
    )


def data_queries_executed(state: State, event: EventInput, limits: Limits) -> tuple[State, list[Effect]]:
    return _call_ai(state, event, limits, effect(EffectKind.RECORD_RESULTS))


def actions_executed(state: State, event: EventInput, limits: Limits) -> tuple[State, list[Effect]]:
    """Decision: success needs an explicit ``allSuccess`` (the processor derives it from the
    recorded results: every command SUCCESS or CACHED, and at least one command)."""
    if not event.payload.get("allSuccess", False):
        return action_failure(state, event, limits)
    effects = [effect(EffectKind.RECORD_RESULTS), effect(EffectKind.POST_TEXT)]
    if state.session_type == SessionType.AUTOMATION or event.payload.get("keepControl"):
        return _call_ai(state, event, limits, *effects)
    return replace(state, phase=Phase.IDLE, waiting_context=None), effects


def action_failure(state: State, event: EventInput, limits: Limits) -> tuple[State, list[Effect]]:
    """No limit on action failures: the model must change its strategy (it sees the results)."""
    new = replace(state, phase=Phase.RETRYING_AFTER_ACTION_FAILURE, waiting_context=None)
    return new, [effect(EffectKind.RECORD_RESULTS), effect(EffectKind.RETRY)]


def completion_confirmed(state: State, event: EventInput, limits: Limits) -> tuple[State, list[Effect]]:
    return _close(replace(state, waiting_context=None), event, EndReason.COMPLETED)


def completion_rejected(state: State, event: EventInput, limits: Limits) -> tuple[State, list[Effect]]:
    """The platform refused the model's ``completed`` claim: the model is told why (a FORMAT_ERROR,
    sent back for correction) and called again; the confirmation timer is dropped."""
    reason = event.payload.get("reason")
    effects = []
    if reason:
        effects.append(effect(EffectKind.SYSTEM_MESSAGE, type=SystemMessageType.FORMAT_ERROR.value, summary=reason))
    return _call_ai(replace(state, waiting_context=None), event, limits, *effects)


def network_error(state: State, event: EventInput, limits: Limits) -> tuple[State, list[Effect]]:
    summary = event.payload.get("summary") or "The AI provider could not be reached."
    if _is_chat(state):
        # The session stays active; the user tries again by sending a message.
        message = effect(EffectKind.SYSTEM_MESSAGE, type=SystemMessageType.NETWORK_ERROR.value, summary=summary)
        return replace(state, phase=Phase.IDLE), [message]
    delay = network_retry_delay(event.payload.get("retryAfter"))
    if delay != NETWORK_RETRY_DELAY:
        summary = f"{summary} The provider asked to wait: next attempt in {int(delay.total_seconds())} s."
    message = effect(EffectKind.SYSTEM_MESSAGE, type=SystemMessageType.NETWORK_ERROR.value, summary=summary)
    new = replace(state, phase=Phase.WAITING_NETWORK_RETRY, **_timer(event.at + delay, Event.NETWORK_AVAILABLE))
    return new, [message, effect(EffectKind.SCHEDULE)]


def network_retry_delay(retry_after: Any) -> timedelta:
    """The seed's 30 s between attempts, or longer when the provider said so (Retry-After), capped
    at MAX_NETWORK_RETRY_DELAY so a wild header cannot park the session for days."""
    if isinstance(retry_after, bool) or not isinstance(retry_after, int) or retry_after <= 0:
        return NETWORK_RETRY_DELAY
    return min(MAX_NETWORK_RETRY_DELAY, max(NETWORK_RETRY_DELAY, timedelta(seconds=retry_after)))


def network_retry_scheduled(state: State, event: EventInput, limits: Limits) -> tuple[State, list[Effect]]:
    """Still offline: wait another 30 s (retries are unlimited in AUTOMATION)."""
    return replace(state, **_timer(event.at + NETWORK_RETRY_DELAY, Event.NETWORK_AVAILABLE)), [
        effect(EffectKind.SCHEDULE)
    ]


def network_available(state: State, event: EventInput, limits: Limits) -> tuple[State, list[Effect]]:
    return _call_ai(state, event, limits)


def system_error(state: State, event: EventInput, limits: Limits) -> tuple[State, list[Effect]]:
    """Provider or system failure: recorded (as the seed's audit-only NETWORK_ERROR type), then closed."""
    summary = event.payload.get("summary") or "The AI provider or the system failed."
    message = effect(EffectKind.SYSTEM_MESSAGE, type=SystemMessageType.NETWORK_ERROR.value, summary=summary)
    return _close(state, event, EndReason.ERROR, message)


def session_completed(state: State, event: EventInput, limits: Limits) -> tuple[State, list[Effect]]:
    """Ends the session: after the closure delay, or at once when stopped (CANCELLED) or
    suspended (SUSPENDED, which keeps the phase so the session can resume)."""
    requested = event.payload.get("endReason")
    try:
        reason = EndReason(requested) if requested else state.pending_end_reason
    except ValueError as exc:
        raise InvalidPayload("endReason", f"endReason must be one of {', '.join(EndReason)}") from exc
    if reason is None:
        raise TransitionRefused(state.phase, event.type, "no end reason: the session is not closing")
    if reason in RESUMABLE_END_REASONS:
        if state.phase == Phase.AWAITING_SESSION_CLOSURE:
            reason = state.pending_end_reason  # it was ending anyway: it ends now, for its own reason
        else:
            # Suspended or cut off by the network: the phase is kept so the session resumes there.
            return replace(state, is_active=False, end_reason=reason), [effect(EffectKind.SESSION_RELEASED)]
    new = replace(
        state,
        phase=Phase.COMPLETED,
        is_active=False,
        end_reason=reason,
        pending_end_reason=None,
        waiting_context=None,
        **_timer(None, None),
    )
    return new, [effect(EffectKind.SESSION_RELEASED)]


def heartbeat(state: State, event: EventInput, limits: Limits) -> tuple[State, list[Effect]]:
    """The watchdog: ends an AUTOMATION inactive for too long, except while work is under way,
    while it waits for the network, or while it is closing anyway. A CHAT never closes by itself."""
    if state.phase in _NEVER_TIMED_OUT or not state.is_active or _is_chat(state):
        return state, []  # work under way, a network wait, a closing session, or a chat
    # Waits count from the last user interaction; one nobody has interacted with yet (an
    # automation waiting for a tool approval) counts from when it began: the event that entered
    # the phase is the last one it took (a watchdog look is not one).
    since = state.last_event_time
    if state.phase in WAITING_PHASES and state.last_user_interaction_time is not None:
        since = state.last_user_interaction_time
    if since is None or event.at - since < limits.inactivity_timeout:
        return state, []
    message = effect(
        EffectKind.SYSTEM_MESSAGE,
        type=SystemMessageType.SESSION_TIMEOUT.value,
        summary=f"No activity for {limits.inactivity_timeout}; the session was closed.",
    )
    return _close(state, event, EndReason.TIMEOUT, message)


# Phases whose work is the agent's (its model call, its delegated queries, its actions): past the
# deadline the agent is taken for gone. The other active phases are the platform's own chain.
_AGENT_WORK = {
    Phase.CALLING_AI: SystemMessageType.NETWORK_ERROR,
    Phase.EXECUTING_DATA_QUERIES: SystemMessageType.SESSION_TIMEOUT,
    Phase.EXECUTING_ACTIONS: SystemMessageType.SESSION_TIMEOUT,
}


def deadline_passed(state: State, event: EventInput, limits: Limits) -> tuple[State, list[Effect]]:
    """The active phase is overdue. Hosted work is handed to the worker again (the broker may have
    lost it); the platform's own steps run again; an agent that did not report in time is taken
    for gone: a CHAT goes back to IDLE (a chat never closes by itself), an AUTOMATION gives its
    slot up at once, ended NETWORK_ERROR with its phase kept, so it resumes later (seed section 6)
    and, in EXECUTING_ACTIONS, asks for the outcome of its actions instead of running them again."""
    if state.deadline_at is None or event.at < state.deadline_at:
        return state, []  # re-armed meanwhile, or not due yet: nothing to do
    rearmed = event.at + limits.phase_deadlines[state.phase]
    if state.phase == Phase.CALLING_AI and state.hosted_calls:
        return replace(state, deadline_at=rearmed), [effect(EffectKind.CALL_AI)]
    if state.phase == Phase.EXECUTING_ACTIONS and state.hosted_actions:
        return replace(state, deadline_at=rearmed), [effect(EffectKind.EXECUTE_ACTIONS)]
    if state.phase not in _AGENT_WORK:
        return replace(state, deadline_at=rearmed), [effect(EffectKind.RESUME)]
    allowed_for = limits.phase_deadlines[state.phase]
    summary = f"The agent did not report within {int(allowed_for.total_seconds())} s of entering {state.phase.value}."
    message = effect(EffectKind.SYSTEM_MESSAGE, type=_AGENT_WORK[state.phase].value, summary=summary)
    if _is_chat(state):
        if state.phase == Phase.CALLING_AI:
            return replace(state, phase=Phase.IDLE, deadline_at=None), [message]
        # Decision: the outcome of a chat's actions or queries is unknown; the user asks again.
        return replace(state, phase=Phase.IDLE, waiting_context=None, deadline_at=None), [message]
    released = replace(state, is_active=False, end_reason=EndReason.NETWORK_ERROR, deadline_at=None)
    return released, [message, effect(EffectKind.SESSION_RELEASED, requeue=True)]


# --- the table -------------------------------------------------------------------------------

_RUNNING = [p for p in Phase if p not in (Phase.COMPLETED, Phase.AWAITING_SESSION_CLOSURE)]
_NOT_TERMINAL = [p for p in Phase if p != Phase.COMPLETED]

TABLE: dict[tuple[Phase, Event], Handler] = {
    **{(p, Event.SESSION_ACTIVATION_REQUESTED): activate for p in _RUNNING},
    (Phase.IDLE, Event.USER_MESSAGE_SENT): user_message,
    (Phase.WAITING_VALIDATION, Event.USER_MESSAGE_SENT): user_message,
    (Phase.WAITING_COMMUNICATION_RESPONSE, Event.USER_MESSAGE_SENT): user_message,
    (Phase.EXECUTING_ENRICHMENTS, Event.ENRICHMENTS_EXECUTED): enrichments_executed,
    (Phase.CALLING_AI, Event.AI_RESPONSE_RECEIVED): ai_response_received,
    (Phase.CALLING_AI, Event.NETWORK_ERROR_OCCURRED): network_error,
    (Phase.PARSING_AI_RESPONSE, Event.AI_RESPONSE_PARSED): ai_response_parsed,
    (Phase.PARSING_AI_RESPONSE, Event.PARSE_ERROR_OCCURRED): parse_error,
    (Phase.WAITING_VALIDATION, Event.VALIDATION_RECEIVED): validation_received,
    (Phase.WAITING_COMMUNICATION_RESPONSE, Event.COMMUNICATION_RESPONSE_RECEIVED): communication_response,
    (Phase.EXECUTING_DATA_QUERIES, Event.DATA_QUERIES_EXECUTED): data_queries_executed,
    (Phase.EXECUTING_ACTIONS, Event.ACTIONS_EXECUTED): actions_executed,
    (Phase.EXECUTING_ACTIONS, Event.ACTION_FAILURE_OCCURRED): action_failure,
    (Phase.RETRYING_AFTER_FORMAT_ERROR, Event.RETRY_SCHEDULED): retry,
    (Phase.RETRYING_AFTER_ACTION_FAILURE, Event.RETRY_SCHEDULED): retry,
    (Phase.WAITING_COMPLETION_CONFIRMATION, Event.COMPLETION_CONFIRMED): completion_confirmed,
    (Phase.WAITING_COMPLETION_CONFIRMATION, Event.COMPLETION_REJECTED): completion_rejected,
    (Phase.WAITING_NETWORK_RETRY, Event.NETWORK_RETRY_SCHEDULED): network_retry_scheduled,
    (Phase.WAITING_NETWORK_RETRY, Event.NETWORK_AVAILABLE): network_available,
    **{(p, Event.SYSTEM_ERROR_OCCURRED): system_error for p in _RUNNING if p != Phase.IDLE},
    **{(p, Event.SESSION_COMPLETED): session_completed for p in _NOT_TERMINAL},
    **{(p, Event.SCHEDULER_HEARTBEAT): heartbeat for p in _NOT_TERMINAL},
    **{(p, Event.PHASE_DEADLINE_PASSED): deadline_passed for p in ACTIVE_PHASES},
}

# Events only an active session accepts (activation itself is the way in).
_NEEDS_ACTIVE = frozenset(Event) - {
    Event.SESSION_ACTIVATION_REQUESTED,
    Event.SESSION_COMPLETED,
    Event.SCHEDULER_HEARTBEAT,
}


def allowed(phase: Phase, event: Event) -> bool:
    return (phase, event) in TABLE


def transition(state: State, event: EventInput, limits: Limits | None = None) -> tuple[State, list[Effect]]:
    """Apply ``event``; refuse any pair outside the table or any event an inactive session cannot take."""
    handler = TABLE.get((state.phase, event.type))
    if handler is None:
        raise TransitionRefused(state.phase, event.type)
    if event.type in _NEEDS_ACTIVE and not state.is_active:
        raise TransitionRefused(state.phase, event.type, "the session is not active")
    closing = state.phase == Phase.AWAITING_SESSION_CLOSURE
    if event.type == Event.SESSION_COMPLETED and not closing and not event.payload.get("endReason"):
        raise TransitionRefused(state.phase, event.type, "only a closing session completes without an end reason")
    limits = limits or Limits()
    new, effects = handler(state, event, limits)
    if event.type in _LOOKS and new == state:
        return state, effects  # a watchdog look, or a deadline not due, is not activity
    return replace(new, last_event_time=event.at, deadline_at=_deadline(state, new, event, limits)), effects


_LOOKS = frozenset({Event.SCHEDULER_HEARTBEAT, Event.PHASE_DEADLINE_PASSED})


def _deadline(before: State, after: State, event: EventInput, limits: Limits) -> datetime | None:
    """Entering an active phase (or resuming in one) arms its deadline; staying keeps it;
    leaving the active phases, or the slot, clears it."""
    if not after.is_active or after.phase not in limits.phase_deadlines:
        return None
    if after.phase != before.phase or not before.is_active:
        return event.at + limits.phase_deadlines[after.phase]
    return after.deadline_at
