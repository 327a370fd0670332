"""The AI session state machine (seed 003, sections 1, 3, 5-8, 12): pure transitions, no database.

The expectations here come from the seed and from the "Decision:" notes of ``sessions/machine.py``;
where the machine contradicts them, the test is a strict xfail naming the bug.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sessions.machine import (
    TABLE,
    Effect,
    EndReason,
    Event,
    EventInput,
    InvalidPayload,
    Limits,
    Phase,
    SessionType,
    State,
    SystemMessageType,
    TransitionRefused,
    allowed,
    transition,
)

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

# A valid payload for each event, used by the exhaustive passes.
PAYLOADS: dict[Event, dict[str, Any]] = {
    Event.SESSION_ACTIVATION_REQUESTED: {},
    Event.USER_MESSAGE_SENT: {"text": "How did I sleep this week?"},
    Event.ENRICHMENTS_EXECUTED: {},
    Event.AI_RESPONSE_RECEIVED: {"content": '{"preText": "..."}'},
    Event.AI_RESPONSE_PARSED: {"preText": "Let me look.", "dataCommands": DATA},
    Event.VALIDATION_RECEIVED: {"approved": True},
    Event.COMMUNICATION_RESPONSE_RECEIVED: {"response": "a"},
    Event.DATA_QUERIES_EXECUTED: {},
    Event.ACTIONS_EXECUTED: {"allSuccess": True},
    Event.COMPLETION_CONFIRMED: {},
    Event.COMPLETION_REJECTED: {},
    Event.NETWORK_ERROR_OCCURRED: {"summary": "offline"},
    Event.PARSE_ERROR_OCCURRED: {"summary": "not JSON"},
    Event.ACTION_FAILURE_OCCURRED: {},
    Event.NETWORK_RETRY_SCHEDULED: {},
    Event.RETRY_SCHEDULED: {},
    Event.NETWORK_AVAILABLE: {},
    Event.SYSTEM_ERROR_OCCURRED: {"summary": "provider misconfigured"},
    Event.SESSION_COMPLETED: {"endReason": EndReason.CANCELLED.value},
    Event.SCHEDULER_HEARTBEAT: {},
    Event.PHASE_DEADLINE_PASSED: {},
}


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


# --- 1. the whole table, exhaustively --------------------------------------------------------


@pytest.mark.parametrize("session_type", TYPES, ids=str)
@pytest.mark.parametrize("event", list(Event), ids=str)
@pytest.mark.parametrize("phase", list(Phase), ids=str)
def test_an_active_session_accepts_exactly_the_pairs_of_the_table(phase, event, session_type):
    # Activation is the way in, so its valid precondition is a session that is not active yet.
    state = make_state(phase, session_type, active=event is not Event.SESSION_ACTIVATION_REQUESTED)
    incoming = ev(event, **PAYLOADS[event])

    if (phase, event) in TABLE:
        assert allowed(phase, event)
        new, effects = transition(state, incoming)
        assert isinstance(new, State)
        assert all(isinstance(e, Effect) for e in effects)
        if event is Event.SCHEDULER_HEARTBEAT:
            assert new == state  # a recent session: the watchdog has nothing to do
        else:
            assert new.last_event_time == incoming.at
    else:
        assert not allowed(phase, event)
        with pytest.raises(TransitionRefused) as refused:
            transition(state, incoming)
        assert refused.value.phase is phase
        assert refused.value.event is event
        assert phase.value in str(refused.value)
        assert event.value in str(refused.value)


ACCEPTED_WHEN_INACTIVE = (
    {(p, Event.SESSION_ACTIVATION_REQUESTED) for p in RUNNING}
    | {(p, Event.SESSION_COMPLETED) for p in NON_TERMINAL}
    | {(p, Event.SCHEDULER_HEARTBEAT) for p in NON_TERMINAL}
)


@pytest.mark.parametrize("session_type", TYPES, ids=str)
@pytest.mark.parametrize("event", list(Event), ids=str)
@pytest.mark.parametrize("phase", list(Phase), ids=str)
def test_an_inactive_session_only_accepts_activation_an_explicit_end_and_the_watchdog(phase, event, session_type):
    state = make_state(phase, session_type, active=False)
    incoming = ev(event, **PAYLOADS[event])

    if (phase, event) in ACCEPTED_WHEN_INACTIVE:
        new, _ = transition(state, incoming)
        if event is Event.SESSION_ACTIVATION_REQUESTED:
            assert new.is_active
        elif event is Event.SESSION_COMPLETED:
            assert (new.phase, new.is_active, new.end_reason) == (Phase.COMPLETED, False, EndReason.CANCELLED)
        else:
            assert new == state  # the watchdog never closes a session that is not running
    else:
        with pytest.raises(TransitionRefused) as refused:
            transition(state, incoming)
        assert (refused.value.phase, refused.value.event) == (phase, event)


@pytest.mark.parametrize("phase", RUNNING, ids=str)
def test_activating_a_session_that_is_already_active_is_refused(phase):
    state = make_state(phase, SessionType.AUTOMATION)
    with pytest.raises(TransitionRefused) as refused:
        transition(state, ev(Event.SESSION_ACTIVATION_REQUESTED))
    assert (refused.value.phase, refused.value.event) == (phase, Event.SESSION_ACTIVATION_REQUESTED)


@pytest.mark.parametrize("active", [True, False], ids=["active", "inactive"])
@pytest.mark.parametrize("phase", [p for p in NON_TERMINAL if p is not Phase.AWAITING_SESSION_CLOSURE], ids=str)
def test_a_session_that_is_not_closing_needs_an_explicit_end_reason_to_complete(phase, active):
    state = make_state(phase, SessionType.AUTOMATION, active=active)
    with pytest.raises(TransitionRefused) as refused:
        transition(state, ev(Event.SESSION_COMPLETED))
    assert (refused.value.phase, refused.value.event) == (phase, Event.SESSION_COMPLETED)


def test_an_unknown_end_reason_is_an_invalid_payload_not_a_crash():
    state = make_state(Phase.CALLING_AI, SessionType.AUTOMATION)
    with pytest.raises(InvalidPayload) as refused:
        transition(state, ev(Event.SESSION_COMPLETED, endReason="BOGUS"))
    assert refused.value.field == "endReason"


# --- 2. expected next phase for every allowed pair --------------------------------------------


@dataclass(frozen=True)
class Row:
    phase: Phase
    event: Event
    session_type: SessionType
    payload: dict[str, Any]
    expected_phase: Phase
    effects: tuple[str, ...]
    messages: tuple[SystemMessageType, ...] = ()


C, A = SessionType.CHAT, SessionType.AUTOMATION
FORMAT_ERROR, NETWORK_ERROR = SystemMessageType.FORMAT_ERROR, SystemMessageType.NETWORK_ERROR
ACTIONS_EXECUTED = SystemMessageType.ACTIONS_EXECUTED
SESSION_TIMEOUT = SystemMessageType.SESSION_TIMEOUT
PLATFORM_WORK = (
    Phase.EXECUTING_ENRICHMENTS,
    Phase.PARSING_AI_RESPONSE,
    Phase.RETRYING_AFTER_FORMAT_ERROR,
    Phase.RETRYING_AFTER_ACTION_FAILURE,
)
AGENT_WORK = (
    (Phase.CALLING_AI, SystemMessageType.NETWORK_ERROR),
    (Phase.EXECUTING_DATA_QUERIES, SESSION_TIMEOUT),
    (Phase.EXECUTING_ACTIONS, SESSION_TIMEOUT),
)
P, E = Phase, Event

ROWS: list[tuple[str, Row]] = [
    # Activation: an AUTOMATION starts with the SEED enrichments, everything else resumes where it was.
    ("chat-starts-idle", Row(P.IDLE, E.SESSION_ACTIVATION_REQUESTED, C, {}, P.IDLE, ("resume",))),
    (
        "automation-starts-with-seed-enrichments",
        Row(P.IDLE, E.SESSION_ACTIVATION_REQUESTED, A, {}, P.EXECUTING_ENRICHMENTS, ("execute_enrichments",)),
    ),
    *[
        (f"{t}-resumes-in-{p}", Row(p, E.SESSION_ACTIVATION_REQUESTED, t, {}, p, ("resume",)))
        for p in RUNNING
        if p is not P.IDLE
        for t in TYPES
    ],
    # The main flow (section 7).
    *[
        (
            f"{t}-user-message-from-{p}",
            Row(p, E.USER_MESSAGE_SENT, t, {"text": "hi"}, P.EXECUTING_ENRICHMENTS, effects),
        )
        for t in TYPES
        for p, effects in [
            (P.IDLE, ("store_user_message", "execute_enrichments")),
            (P.WAITING_VALIDATION, ("abandon_waiting", "store_user_message", "execute_enrichments")),
            (P.WAITING_COMMUNICATION_RESPONSE, ("abandon_waiting", "store_user_message", "execute_enrichments")),
        ]
    ],
    *[
        (
            f"{t}-enrichments-done",
            Row(P.EXECUTING_ENRICHMENTS, E.ENRICHMENTS_EXECUTED, t, {}, P.CALLING_AI, ("call_ai",)),
        )
        for t in TYPES
    ],
    *[
        (
            f"{t}-ai-answered",
            Row(
                P.CALLING_AI,
                E.AI_RESPONSE_RECEIVED,
                t,
                {},
                P.PARSING_AI_RESPONSE,
                ("store_ai_response", "parse_response"),
            ),
        )
        for t in TYPES
    ],
    # The AIResponseParsed decision tree, in order: completed? validation? communication? data? actions? nothing.
    (
        "automation-completed-wins-over-everything",
        Row(
            P.PARSING_AI_RESPONSE,
            E.AI_RESPONSE_PARSED,
            A,
            {
                "completed": True,
                "validationRequired": True,
                "actionCommands": ACTIONS,
                "communicationModule": MODULE,
                "dataCommands": DATA,
            },
            P.WAITING_COMPLETION_CONFIRMATION,
            ("schedule",),
        ),
    ),
    (
        "chat-ignores-completed-and-queries-data",
        Row(
            P.PARSING_AI_RESPONSE,
            E.AI_RESPONSE_PARSED,
            C,
            {"completed": True, "dataCommands": DATA},
            P.EXECUTING_DATA_QUERIES,
            ("execute_data_queries",),
        ),
    ),
    (
        "chat-ignores-completed-alone",
        Row(P.PARSING_AI_RESPONSE, E.AI_RESPONSE_PARSED, C, {"completed": True}, P.IDLE, ()),
    ),
    *[
        (
            f"{t}-validation-wins-over-communication-data-actions",
            Row(
                P.PARSING_AI_RESPONSE,
                E.AI_RESPONSE_PARSED,
                t,
                {
                    "validationRequired": True,
                    "actionCommands": ACTIONS,
                    "communicationModule": MODULE,
                    "dataCommands": DATA,
                },
                P.WAITING_VALIDATION,
                ("request_validation",),
            ),
        )
        for t in TYPES
    ],
    (
        "chat-validation-without-actions-is-no-validation",
        Row(
            P.PARSING_AI_RESPONSE,
            E.AI_RESPONSE_PARSED,
            C,
            {"validationRequired": True, "dataCommands": DATA},
            P.EXECUTING_DATA_QUERIES,
            ("execute_data_queries",),
        ),
    ),
    (
        "chat-communication-wins-over-data-and-actions",
        Row(
            P.PARSING_AI_RESPONSE,
            E.AI_RESPONSE_PARSED,
            C,
            {"communicationModule": MODULE, "dataCommands": DATA, "actionCommands": ACTIONS},
            P.WAITING_COMMUNICATION_RESPONSE,
            ("request_communication",),
        ),
    ),
    (
        "automation-communication-is-a-format-error",
        Row(
            P.PARSING_AI_RESPONSE,
            E.AI_RESPONSE_PARSED,
            A,
            {"communicationModule": MODULE, "dataCommands": DATA},
            P.RETRYING_AFTER_FORMAT_ERROR,
            ("system_message", "retry"),
            (FORMAT_ERROR,),
        ),
    ),
    *[
        (
            f"{t}-data-wins-over-actions",
            Row(
                P.PARSING_AI_RESPONSE,
                E.AI_RESPONSE_PARSED,
                t,
                {"dataCommands": DATA, "actionCommands": ACTIONS},
                P.EXECUTING_DATA_QUERIES,
                ("execute_data_queries",),
            ),
        )
        for t in TYPES
    ],
    *[
        (
            f"{t}-actions",
            Row(
                P.PARSING_AI_RESPONSE,
                E.AI_RESPONSE_PARSED,
                t,
                {"actionCommands": ACTIONS},
                P.EXECUTING_ACTIONS,
                ("execute_actions",),
            ),
        )
        for t in TYPES
    ],
    ("chat-nothing-to-do-waits-for-the-user", Row(P.PARSING_AI_RESPONSE, E.AI_RESPONSE_PARSED, C, {}, P.IDLE, ())),
    (
        "automation-nothing-to-do-continues",
        Row(P.PARSING_AI_RESPONSE, E.AI_RESPONSE_PARSED, A, {"preText": "thinking"}, P.CALLING_AI, ("call_ai",)),
    ),
    *[
        (
            f"{t}-parse-error-retries",
            Row(
                P.PARSING_AI_RESPONSE,
                E.PARSE_ERROR_OCCURRED,
                t,
                {},
                P.RETRYING_AFTER_FORMAT_ERROR,
                ("system_message", "retry"),
                (FORMAT_ERROR,),
            ),
        )
        for t in TYPES
    ],
    # Network (section 8).
    (
        "chat-network-error-back-to-idle",
        Row(P.CALLING_AI, E.NETWORK_ERROR_OCCURRED, C, {}, P.IDLE, ("system_message",), (NETWORK_ERROR,)),
    ),
    (
        "automation-network-error-waits-to-retry",
        Row(
            P.CALLING_AI,
            E.NETWORK_ERROR_OCCURRED,
            A,
            {},
            P.WAITING_NETWORK_RETRY,
            ("system_message", "schedule"),
            (NETWORK_ERROR,),
        ),
    ),
    (
        "automation-still-offline-waits-again",
        Row(P.WAITING_NETWORK_RETRY, E.NETWORK_RETRY_SCHEDULED, A, {}, P.WAITING_NETWORK_RETRY, ("schedule",)),
    ),
    (
        "automation-network-back-calls-again",
        Row(P.WAITING_NETWORK_RETRY, E.NETWORK_AVAILABLE, A, {}, P.CALLING_AI, ("call_ai",)),
    ),
    # Validation and communication (sections 7, 12).
    *[
        (
            f"{t}-validation-approved",
            Row(
                P.WAITING_VALIDATION,
                E.VALIDATION_RECEIVED,
                t,
                {"approved": True},
                P.EXECUTING_ACTIONS,
                ("remove_fallback", "execute_actions"),
            ),
        )
        for t in TYPES
    ],
    (
        "chat-validation-rejected-back-to-idle",
        Row(
            P.WAITING_VALIDATION,
            E.VALIDATION_RECEIVED,
            C,
            {"approved": False},
            P.IDLE,
            ("system_message",),
            (ACTIONS_EXECUTED,),
        ),
    ),
    (
        "automation-validation-rejected-back-to-the-model",
        Row(
            P.WAITING_VALIDATION,
            E.VALIDATION_RECEIVED,
            A,
            {"approved": False},
            P.CALLING_AI,
            ("system_message", "call_ai"),
            (ACTIONS_EXECUTED,),
        ),
    ),
    (
        "chat-communication-answered",
        Row(
            P.WAITING_COMMUNICATION_RESPONSE,
            E.COMMUNICATION_RESPONSE_RECEIVED,
            C,
            {"response": "a"},
            P.CALLING_AI,
            ("remove_fallback", "store_communication_response", "call_ai"),
        ),
    ),
    # Commands.
    *[
        (
            f"{t}-data-queries-done",
            Row(P.EXECUTING_DATA_QUERIES, E.DATA_QUERIES_EXECUTED, t, {}, P.CALLING_AI, ("record_results", "call_ai")),
        )
        for t in TYPES
    ],
    (
        "chat-actions-done-back-to-idle",
        Row(P.EXECUTING_ACTIONS, E.ACTIONS_EXECUTED, C, {"allSuccess": True}, P.IDLE, ("record_results", "post_text")),
    ),
    (
        "chat-actions-done-keep-control",
        Row(
            P.EXECUTING_ACTIONS,
            E.ACTIONS_EXECUTED,
            C,
            {"allSuccess": True, "keepControl": True},
            P.CALLING_AI,
            ("record_results", "post_text", "call_ai"),
        ),
    ),
    (
        "automation-actions-done-continues",
        Row(
            P.EXECUTING_ACTIONS,
            E.ACTIONS_EXECUTED,
            A,
            {"allSuccess": True},
            P.CALLING_AI,
            ("record_results", "post_text", "call_ai"),
        ),
    ),
    *[
        (
            f"{t}-actions-partly-failed-retry",
            Row(
                P.EXECUTING_ACTIONS,
                E.ACTIONS_EXECUTED,
                t,
                {"allSuccess": False, "keepControl": True},
                P.RETRYING_AFTER_ACTION_FAILURE,
                ("record_results", "retry"),
            ),
        )
        for t in TYPES
    ],
    *[
        (
            f"{t}-action-failure-retry",
            Row(
                P.EXECUTING_ACTIONS,
                E.ACTION_FAILURE_OCCURRED,
                t,
                {},
                P.RETRYING_AFTER_ACTION_FAILURE,
                ("record_results", "retry"),
            ),
        )
        for t in TYPES
    ],
    *[
        (f"{t}-retry-from-{p}", Row(p, E.RETRY_SCHEDULED, t, {}, P.CALLING_AI, ("call_ai",)))
        for p in (P.RETRYING_AFTER_FORMAT_ERROR, P.RETRYING_AFTER_ACTION_FAILURE)
        for t in TYPES
    ],
    # Completion (section 6).
    (
        "automation-completion-confirmed-closes",
        Row(
            P.WAITING_COMPLETION_CONFIRMATION,
            E.COMPLETION_CONFIRMED,
            A,
            {},
            P.AWAITING_SESSION_CLOSURE,
            ("schedule",),
        ),
    ),
    (
        "automation-completion-rejected-continues",
        Row(P.WAITING_COMPLETION_CONFIRMATION, E.COMPLETION_REJECTED, A, {}, P.CALLING_AI, ("call_ai",)),
    ),
    # Errors, ends and the watchdog, from every phase they apply to.
    *[
        (
            f"{t}-system-error-in-{p}",
            Row(
                p,
                E.SYSTEM_ERROR_OCCURRED,
                t,
                {},
                P.AWAITING_SESSION_CLOSURE,
                ("system_message", "schedule"),
                (NETWORK_ERROR,),  # the seed's audit-only type for provider/system failures
            ),
        )
        for p in RUNNING
        if p is not P.IDLE
        for t in TYPES
    ],
    *[
        (
            f"{t}-cancelled-in-{p}",
            Row(p, E.SESSION_COMPLETED, t, {"endReason": "CANCELLED"}, P.COMPLETED, ("session_released",)),
        )
        for p in NON_TERMINAL
        for t in TYPES
    ],
    *[
        (
            f"{t}-closure-timer-fires",
            Row(P.AWAITING_SESSION_CLOSURE, E.SESSION_COMPLETED, t, {}, P.COMPLETED, ("session_released",)),
        )
        for t in TYPES
    ],
    *[
        (f"{t}-quiet-heartbeat-in-{p}", Row(p, E.SCHEDULER_HEARTBEAT, t, {}, p, ()))
        for p in NON_TERMINAL
        for t in TYPES
    ],
    # Past the phase's deadline: the platform's own steps run again; the agent's work times out.
    *[
        (f"{t}-deadline-reruns-{p}", Row(p, E.PHASE_DEADLINE_PASSED, t, {}, p, ("resume",)))
        for p in PLATFORM_WORK
        for t in TYPES
    ],
    *[
        (
            f"chat-deadline-in-{p}-returns-to-idle",
            Row(p, E.PHASE_DEADLINE_PASSED, C, {}, P.IDLE, ("system_message",), (m,)),
        )
        for p, m in AGENT_WORK
    ],
    *[
        (
            f"automation-deadline-in-{p}-releases-the-slot",
            Row(p, E.PHASE_DEADLINE_PASSED, A, {}, p, ("system_message", "session_released"), (m,)),
        )
        for p, m in AGENT_WORK
    ],
]


@pytest.mark.parametrize("row", [pytest.param(row, id=name) for name, row in ROWS])
def test_each_allowed_pair_leads_to_the_expected_phase_and_effects(row: Row):
    state = make_state(row.phase, row.session_type, active=row.event is not Event.SESSION_ACTIVATION_REQUESTED)
    incoming = ev(row.event, **row.payload)

    new, effects = transition(state, incoming)

    assert new.phase is row.expected_phase
    assert kinds(effects) == list(row.effects)
    assert messages(effects) == list(row.messages)
    assert new.total_roundtrips == state.total_roundtrips + (row.event is Event.AI_RESPONSE_RECEIVED)
    if row.event in USER_EVENTS:
        assert new.last_user_interaction_time == incoming.at
    else:
        assert new.last_user_interaction_time == state.last_user_interaction_time
    if row.event is Event.SCHEDULER_HEARTBEAT:
        assert new == state
    else:
        assert new.last_event_time == incoming.at


def test_the_expected_transitions_cover_the_table_exactly():
    expected = {(row.phase, row.event) for _, row in ROWS}
    assert set(TABLE) - expected == set(), "pairs of the table without an expected transition"
    assert expected - set(TABLE) == set(), "expected transitions missing from the table"
    assert len({name for name, _ in ROWS}) == len(ROWS), "duplicate ids"


def test_automation_completed_flag_waits_five_seconds_then_closes_as_completed():
    state = make_state(Phase.PARSING_AI_RESPONSE, SessionType.AUTOMATION)
    at = T0 + STEP

    waiting, _ = transition(state, ev(Event.AI_RESPONSE_PARSED, at, completed=True, aiMessageId="m-7"))

    confirm_at = at + timedelta(seconds=5)
    assert waiting.phase is Phase.WAITING_COMPLETION_CONFIRMATION
    assert waiting.waiting_context == {
        "type": "CompletionConfirmation",
        "aiMessageId": "m-7",
        "scheduledConfirmationTime": confirm_at.isoformat(),
    }
    assert (waiting.timer_at, waiting.timer_event) == (confirm_at, Event.COMPLETION_CONFIRMED)

    closing, _ = transition(waiting, ev(waiting.timer_event, waiting.timer_at))
    assert closing.phase is Phase.AWAITING_SESSION_CLOSURE
    assert closing.pending_end_reason is EndReason.COMPLETED
    assert closing.waiting_context is None
    assert (closing.timer_at, closing.timer_event) == (confirm_at + timedelta(seconds=5), Event.SESSION_COMPLETED)

    done, effects = transition(closing, ev(closing.timer_event, closing.timer_at))
    assert (done.phase, done.is_active, done.end_reason) == (Phase.COMPLETED, False, EndReason.COMPLETED)
    assert done.pending_end_reason is None
    assert kinds(effects) == ["session_released"]


def test_chat_communication_module_waits_for_the_answer_with_its_context():
    state = make_state(Phase.PARSING_AI_RESPONSE, SessionType.CHAT)
    new, _ = transition(state, ev(Event.AI_RESPONSE_PARSED, communicationModule=MODULE))
    assert new.phase is Phase.WAITING_COMMUNICATION_RESPONSE
    assert new.waiting_context == {"type": "Communication", "communicationModule": MODULE}


def test_validation_required_waits_with_the_validation_context():
    state = make_state(Phase.PARSING_AI_RESPONSE, SessionType.CHAT)
    payload = {"validationRequired": True, "actionCommands": ACTIONS, "validationContext": VALIDATION_CONTEXT}
    new, _ = transition(state, ev(Event.AI_RESPONSE_PARSED, **payload))
    assert new.phase is Phase.WAITING_VALIDATION
    assert new.waiting_context == {"type": "Validation", "validationContext": VALIDATION_CONTEXT}


def test_automation_network_error_arms_a_thirty_second_timer_firing_network_available():
    state = make_state(Phase.CALLING_AI, SessionType.AUTOMATION)
    at = T0 + STEP
    new, _ = transition(state, ev(Event.NETWORK_ERROR_OCCURRED, at))
    assert (new.timer_at, new.timer_event) == (at + timedelta(seconds=30), Event.NETWORK_AVAILABLE)
    assert new.is_active
    assert new.pending_end_reason is None


def test_chat_network_error_keeps_the_session_active_without_retry():
    state = make_state(Phase.CALLING_AI, SessionType.CHAT)
    new, effects = transition(state, ev(Event.NETWORK_ERROR_OCCURRED))
    assert (new.phase, new.is_active, new.pending_end_reason) == (Phase.IDLE, True, None)
    assert (new.timer_at, new.timer_event) == (None, None)
    assert "schedule" not in kinds(effects)


def test_still_offline_rearms_the_network_timer_thirty_seconds_later():
    state = make_state(Phase.WAITING_NETWORK_RETRY, SessionType.AUTOMATION)
    later = state.timer_at + STEP
    new, _ = transition(state, ev(Event.NETWORK_RETRY_SCHEDULED, later))
    assert new.phase is Phase.WAITING_NETWORK_RETRY
    assert (new.timer_at, new.timer_event) == (later + timedelta(seconds=30), Event.NETWORK_AVAILABLE)


@pytest.mark.parametrize("session_type", TYPES, ids=str)
def test_system_error_closes_with_error_after_five_seconds(session_type):
    state = make_state(Phase.EXECUTING_DATA_QUERIES, session_type)
    at = T0 + STEP

    closing, _ = transition(state, ev(Event.SYSTEM_ERROR_OCCURRED, at))
    assert closing.phase is Phase.AWAITING_SESSION_CLOSURE
    assert closing.pending_end_reason is EndReason.ERROR
    assert (closing.timer_at, closing.timer_event) == (at + timedelta(seconds=5), Event.SESSION_COMPLETED)
    assert closing.is_active

    done, _ = transition(closing, ev(Event.SESSION_COMPLETED, closing.timer_at))
    assert (done.phase, done.is_active, done.end_reason) == (Phase.COMPLETED, False, EndReason.ERROR)
    assert (done.timer_at, done.timer_event, done.pending_end_reason) == (None, None, None)


@pytest.mark.parametrize(
    "reason", [EndReason.COMPLETED, EndReason.LIMIT_REACHED, EndReason.ERROR, EndReason.TIMEOUT], ids=str
)
def test_closure_ends_with_the_pending_reason(reason):
    state = make_state(Phase.AWAITING_SESSION_CLOSURE, SessionType.AUTOMATION, pending_end_reason=reason)
    done, _ = transition(state, ev(Event.SESSION_COMPLETED, state.timer_at))
    assert (done.phase, done.is_active, done.end_reason, done.pending_end_reason) == (
        Phase.COMPLETED,
        False,
        reason,
        None,
    )


@pytest.mark.parametrize("session_type", TYPES, ids=str)
@pytest.mark.parametrize("phase", NON_TERMINAL, ids=str)
def test_stop_cancels_from_any_phase_for_good(phase, session_type):
    state = make_state(phase, session_type)
    done, _ = transition(state, ev(Event.SESSION_COMPLETED, endReason="CANCELLED"))
    assert (done.phase, done.is_active, done.end_reason) == (Phase.COMPLETED, False, EndReason.CANCELLED)
    assert (done.waiting_context, done.timer_at, done.pending_end_reason) == (None, None, None)
    with pytest.raises(TransitionRefused):
        transition(done, ev(Event.SESSION_ACTIVATION_REQUESTED, T0 + 2 * STEP))


SUSPENDABLE = [(p, t) for p in RUNNING for t in TYPES if (p, t) != (Phase.IDLE, SessionType.AUTOMATION)]


@pytest.mark.parametrize(("phase", "session_type"), SUSPENDABLE, ids=lambda v: str(v))
def test_suspension_keeps_the_phase_and_activation_resumes_it_transparently(phase, session_type):
    state = make_state(phase, session_type, total_roundtrips=9)

    suspended, effects = transition(state, ev(Event.SESSION_COMPLETED, endReason="SUSPENDED"))
    assert (suspended.phase, suspended.is_active, suspended.end_reason) == (phase, False, EndReason.SUSPENDED)
    assert suspended.waiting_context == state.waiting_context
    assert kinds(effects) == ["session_released"]

    resumed, effects = transition(suspended, ev(Event.SESSION_ACTIVATION_REQUESTED, T0 + 2 * STEP))
    assert (resumed.phase, resumed.is_active, resumed.end_reason) == (phase, True, None)
    assert resumed.total_roundtrips == 9
    assert resumed.waiting_context == state.waiting_context
    assert "system_message" not in kinds(effects)


def test_a_suspended_session_refuses_work_until_resumed():
    state = make_state(Phase.CALLING_AI, SessionType.AUTOMATION)
    suspended, _ = transition(state, ev(Event.SESSION_COMPLETED, endReason="SUSPENDED"))
    with pytest.raises(TransitionRefused) as refused:
        transition(suspended, ev(Event.AI_RESPONSE_RECEIVED, T0 + 2 * STEP))
    assert (refused.value.phase, refused.value.event) == (Phase.CALLING_AI, Event.AI_RESPONSE_RECEIVED)


def test_a_session_suspended_while_closing_completes_at_once_with_its_pending_reason():
    state = make_state(Phase.AWAITING_SESSION_CLOSURE, SessionType.AUTOMATION, pending_end_reason=EndReason.ERROR)
    done, _ = transition(state, ev(Event.SESSION_COMPLETED, endReason="SUSPENDED"))
    assert (done.phase, done.end_reason, done.is_active) == (Phase.COMPLETED, EndReason.ERROR, False)


def test_a_session_ended_by_a_network_failure_resumes_with_retry():
    state = make_state(Phase.WAITING_NETWORK_RETRY, SessionType.AUTOMATION)
    ended, _ = transition(state, ev(Event.SESSION_COMPLETED, endReason="NETWORK_ERROR"))
    assert not ended.is_active
    resumed, _ = transition(ended, ev(Event.SESSION_ACTIVATION_REQUESTED, T0 + 2 * STEP))
    assert resumed.is_active
    assert resumed.phase is not Phase.COMPLETED


def test_a_seed_template_is_never_activated():
    with pytest.raises(TransitionRefused):
        transition(State(SessionType.SEED), ev(Event.SESSION_ACTIVATION_REQUESTED))


# --- 3. round trips ---------------------------------------------------------------------------

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
    state: State | None = None
    now: datetime = T0
    calls: int = 0
    last_effects: list[Effect] = field(default_factory=list)
    history: list[tuple[State, EventInput, State, list[Effect]]] = field(default_factory=list)
    _answer: Any = None

    def __post_init__(self) -> None:
        self.state = self.state or State(self.session_type)

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


def test_the_automation_limit_is_twenty_round_trips_by_default():
    assert Limits().automation_max_autonomous_roundtrips == 20
    assert Limits().max_roundtrips(SessionType.AUTOMATION) == 20
    assert Limits().max_roundtrips(SessionType.CHAT) is None


def test_automation_stops_after_the_round_trip_limit_and_closes_as_limit_reached():
    limit = Limits().automation_max_autonomous_roundtrips
    loop = Loop(SessionType.AUTOMATION, busy_model)
    loop.send(Event.SESSION_ACTIVATION_REQUESTED)

    closing = loop.follow(until=lambda lp: lp.state.phase is Phase.AWAITING_SESSION_CLOSURE)

    assert loop.count(Event.AI_RESPONSE_RECEIVED) == limit
    assert closing.total_roundtrips == limit
    assert closing.pending_end_reason is EndReason.LIMIT_REACHED
    assert messages(loop.last_effects) == [SystemMessageType.LIMIT_REACHED]
    assert "call_ai" not in kinds(loop.last_effects)
    # The 20th answer was handled; it is the next attempt to call the model that closed the session.
    before, incoming, _, _ = loop.history[-1]
    assert incoming.type is not Event.AI_RESPONSE_RECEIVED
    assert before.total_roundtrips == limit

    done = loop.follow()
    assert (done.phase, done.end_reason, done.is_active) == (Phase.COMPLETED, EndReason.LIMIT_REACHED, False)
    assert done.total_roundtrips == limit
    assert loop.count(Event.AI_RESPONSE_RECEIVED) == limit


def test_each_ai_response_counts_one_round_trip_and_nothing_else_moves_the_counter():
    loop = Loop(SessionType.AUTOMATION, busy_model)
    loop.send(Event.SESSION_ACTIVATION_REQUESTED)
    loop.follow()
    assert loop.count(Event.AI_RESPONSE_RECEIVED) == Limits().automation_max_autonomous_roundtrips
    for before, incoming, after, _ in loop.history:
        moved = after.total_roundtrips - before.total_roundtrips
        assert moved == (incoming.type is Event.AI_RESPONSE_RECEIVED), incoming.type


def test_the_round_trip_counter_survives_suspension_network_retries_and_completion():
    def script(n: int) -> Any:
        if n == 4:
            return NETWORK_DOWN
        if n == 8:
            return {"completed": True, "aiMessageId": "m-8"}
        return {"dataCommands": DATA}

    loop = Loop(SessionType.AUTOMATION, script)
    loop.send(Event.SESSION_ACTIVATION_REQUESTED)
    loop.follow(until=lambda lp: lp.state.total_roundtrips == 2 and lp.state.phase is Phase.CALLING_AI)

    suspended = loop.send(Event.SESSION_COMPLETED, endReason="SUSPENDED")
    assert (suspended.total_roundtrips, suspended.is_active) == (2, False)
    resumed = loop.send(Event.SESSION_ACTIVATION_REQUESTED)
    assert (resumed.total_roundtrips, resumed.phase) == (2, Phase.CALLING_AI)

    done = loop.follow()
    assert loop.count(Event.NETWORK_AVAILABLE) == 1
    assert (done.phase, done.end_reason) == (Phase.COMPLETED, EndReason.COMPLETED)
    # Calls 1-3 and 5-8 reached the model; call 4 hit the network error and counts nothing.
    assert done.total_roundtrips == 7
    assert done.total_roundtrips == loop.count(Event.AI_RESPONSE_RECEIVED)


def test_chat_has_no_round_trip_limit():
    loop = Loop(SessionType.CHAT, lambda n: {"dataCommands": DATA} if n % 2 else {"preText": "Here it is."})
    loop.send(Event.SESSION_ACTIVATION_REQUESTED)
    while loop.state.total_roundtrips < 200:
        loop.send(Event.USER_MESSAGE_SENT, text="and now?")
        assert loop.follow().phase is Phase.IDLE

    assert loop.state.total_roundtrips == 200
    assert loop.state.is_active
    assert loop.state.pending_end_reason is None
    assert SystemMessageType.LIMIT_REACHED not in loop.all_messages()


def test_a_configured_chat_limit_returns_to_idle_instead_of_closing():
    limits = Limits(chat_max_autonomous_roundtrips=3)
    loop = Loop(SessionType.CHAT, lambda n: {"actionCommands": ACTIONS, "keepControl": True}, limits=limits)
    loop.send(Event.SESSION_ACTIVATION_REQUESTED)
    loop.send(Event.USER_MESSAGE_SENT, text="keep going")

    idle = loop.follow()

    assert loop.count(Event.AI_RESPONSE_RECEIVED) == 3
    assert (idle.phase, idle.is_active, idle.pending_end_reason, idle.end_reason) == (Phase.IDLE, True, None, None)
    assert messages(loop.last_effects) == [SystemMessageType.LIMIT_REACHED]
    assert "call_ai" not in kinds(loop.last_effects)


# Every way an AUTOMATION goes back to the model: (phase, event, payload).
BACK_TO_THE_MODEL = [
    (Phase.EXECUTING_ENRICHMENTS, Event.ENRICHMENTS_EXECUTED, {}),
    (Phase.PARSING_AI_RESPONSE, Event.AI_RESPONSE_PARSED, {"preText": "nothing to do"}),
    (Phase.EXECUTING_DATA_QUERIES, Event.DATA_QUERIES_EXECUTED, {}),
    (Phase.EXECUTING_ACTIONS, Event.ACTIONS_EXECUTED, {"allSuccess": True}),
    (Phase.RETRYING_AFTER_FORMAT_ERROR, Event.RETRY_SCHEDULED, {}),
    (Phase.RETRYING_AFTER_ACTION_FAILURE, Event.RETRY_SCHEDULED, {}),
    (Phase.WAITING_NETWORK_RETRY, Event.NETWORK_AVAILABLE, {}),
    (Phase.WAITING_COMPLETION_CONFIRMATION, Event.COMPLETION_REJECTED, {}),
    (Phase.WAITING_VALIDATION, Event.VALIDATION_RECEIVED, {"approved": False}),
]


@pytest.mark.parametrize(
    ("phase", "event", "payload"), [pytest.param(*case, id=f"{case[1]}-from-{case[0]}") for case in BACK_TO_THE_MODEL]
)
def test_every_way_back_to_the_model_respects_the_automation_limit(phase, event, payload):
    limit = Limits().automation_max_autonomous_roundtrips

    below, effects = transition(
        make_state(phase, SessionType.AUTOMATION, total_roundtrips=limit - 1), ev(event, **payload)
    )
    assert below.phase is Phase.CALLING_AI
    assert "call_ai" in kinds(effects)

    at_limit, effects = transition(
        make_state(phase, SessionType.AUTOMATION, total_roundtrips=limit), ev(event, **payload)
    )
    assert at_limit.phase is Phase.AWAITING_SESSION_CLOSURE
    assert at_limit.pending_end_reason is EndReason.LIMIT_REACHED
    assert at_limit.waiting_context is None
    assert SystemMessageType.LIMIT_REACHED in messages(effects)
    assert "call_ai" not in kinds(effects)
    assert kinds(effects)[-1] == "schedule"


def test_a_limit_of_none_means_unlimited_automation():
    limits = Limits(automation_max_autonomous_roundtrips=None)
    state = make_state(Phase.EXECUTING_DATA_QUERIES, SessionType.AUTOMATION, total_roundtrips=10_000)
    new, _ = transition(state, ev(Event.DATA_QUERIES_EXECUTED), limits)
    assert new.phase is Phase.CALLING_AI


# --- 4. watchdog ------------------------------------------------------------------------------

LONG_AGO = T0 - timedelta(days=2)
HEARTBEAT_AT = T0 + STEP


def heartbeat(state: State, limits: Limits | None = None, at: datetime = HEARTBEAT_AT) -> tuple[State, list[Effect]]:
    return transition(state, ev(Event.SCHEDULER_HEARTBEAT, at), limits)


@pytest.mark.parametrize("session_type", TYPES, ids=str)
@pytest.mark.parametrize("phase", [*ACTIVE_PHASES, Phase.WAITING_NETWORK_RETRY], ids=str)
def test_the_watchdog_never_times_out_work_under_way_nor_a_network_retry(phase, session_type):
    state = make_state(phase, session_type, last_event_time=LONG_AGO, last_user_interaction_time=LONG_AGO)
    new, effects = heartbeat(state)
    assert new == state
    assert effects == []


def test_a_chat_in_idle_is_never_closed_by_the_watchdog():
    state = make_state(Phase.IDLE, SessionType.CHAT, last_event_time=LONG_AGO, last_user_interaction_time=LONG_AGO)
    new, effects = heartbeat(state)
    assert new == state
    assert effects == []


def test_an_idle_automation_times_out_after_the_inactivity_timeout():
    timeout = Limits().inactivity_timeout
    state = make_state(Phase.IDLE, SessionType.AUTOMATION, last_event_time=HEARTBEAT_AT - timeout)

    new, effects = heartbeat(state)

    assert new.phase is Phase.AWAITING_SESSION_CLOSURE
    assert new.pending_end_reason is EndReason.TIMEOUT
    assert (new.timer_at, new.timer_event) == (HEARTBEAT_AT + timedelta(seconds=5), Event.SESSION_COMPLETED)
    assert new.last_event_time == HEARTBEAT_AT
    assert messages(effects) == [SystemMessageType.SESSION_TIMEOUT]
    assert kinds(effects) == ["system_message", "schedule"]

    done, _ = transition(new, ev(Event.SESSION_COMPLETED, new.timer_at))
    assert (done.phase, done.end_reason, done.is_active) == (Phase.COMPLETED, EndReason.TIMEOUT, False)


def test_an_automation_just_under_the_timeout_is_left_alone():
    timeout = Limits().inactivity_timeout
    state = make_state(Phase.IDLE, SessionType.AUTOMATION, last_event_time=HEARTBEAT_AT - timeout + STEP)
    new, effects = heartbeat(state)
    assert new == state
    assert effects == []


def test_the_inactivity_timeout_comes_from_the_limits():
    limits = Limits(inactivity_timeout=timedelta(minutes=2))
    state = make_state(Phase.IDLE, SessionType.AUTOMATION, last_event_time=HEARTBEAT_AT - timedelta(minutes=3))
    assert heartbeat(state, limits)[0].phase is Phase.AWAITING_SESSION_CLOSURE
    assert heartbeat(state)[0] == state


@pytest.mark.parametrize("phase", [Phase.WAITING_VALIDATION, Phase.WAITING_COMPLETION_CONFIRMATION], ids=str)
def test_waiting_phases_measure_inactivity_from_the_last_user_interaction(phase):
    quiet_user = make_state(phase, SessionType.AUTOMATION, last_event_time=T0, last_user_interaction_time=LONG_AGO)
    new, effects = heartbeat(quiet_user)
    assert (new.phase, new.pending_end_reason) == (Phase.AWAITING_SESSION_CLOSURE, EndReason.TIMEOUT)
    assert new.waiting_context is None
    assert messages(effects) == [SystemMessageType.SESSION_TIMEOUT]

    recent_user = make_state(phase, SessionType.AUTOMATION, last_event_time=LONG_AGO, last_user_interaction_time=T0)
    assert heartbeat(recent_user) == (recent_user, [])


def test_other_phases_measure_inactivity_from_the_last_event():
    recent_event = make_state(
        Phase.IDLE, SessionType.AUTOMATION, last_event_time=T0, last_user_interaction_time=LONG_AGO
    )
    assert heartbeat(recent_event) == (recent_event, [])

    old_event = make_state(Phase.IDLE, SessionType.AUTOMATION, last_event_time=LONG_AGO, last_user_interaction_time=T0)
    assert heartbeat(old_event)[0].pending_end_reason is EndReason.TIMEOUT


@pytest.mark.parametrize("phase", NON_TERMINAL, ids=str)
def test_the_watchdog_leaves_an_inactive_session_alone(phase):
    state = make_state(
        phase, SessionType.AUTOMATION, active=False, last_event_time=LONG_AGO, last_user_interaction_time=LONG_AGO
    )
    assert heartbeat(state) == (state, [])


@pytest.mark.parametrize("phase", [Phase.WAITING_VALIDATION, Phase.WAITING_COMMUNICATION_RESPONSE], ids=str)
def test_a_chat_waiting_for_its_user_is_never_closed_by_the_watchdog(phase):
    state = make_state(phase, SessionType.CHAT, last_event_time=LONG_AGO, last_user_interaction_time=LONG_AGO)
    new, effects = heartbeat(state)
    assert new.phase is not Phase.AWAITING_SESSION_CLOSURE
    assert new.pending_end_reason is None
    assert SystemMessageType.SESSION_TIMEOUT not in messages(effects)


@pytest.mark.parametrize(
    ("session_type", "reason"),
    [
        (SessionType.AUTOMATION, EndReason.COMPLETED),
        (SessionType.AUTOMATION, EndReason.LIMIT_REACHED),
        (SessionType.AUTOMATION, EndReason.ERROR),
        (SessionType.CHAT, EndReason.ERROR),
    ],
    ids=lambda v: str(v),
)
def test_the_watchdog_does_not_rewrite_the_reason_of_a_closing_session(session_type, reason):
    state = make_state(
        Phase.AWAITING_SESSION_CLOSURE,
        session_type,
        pending_end_reason=reason,
        last_event_time=LONG_AGO,
        last_user_interaction_time=LONG_AGO,
        timer_at=LONG_AGO + timedelta(seconds=5),
    )
    new, effects = heartbeat(state)
    assert new.pending_end_reason is reason
    assert SystemMessageType.SESSION_TIMEOUT not in messages(effects)


# --- 5. validation and abandoned waits ----------------------------------------------------------


@pytest.mark.parametrize("session_type", TYPES, ids=str)
def test_approved_validation_removes_the_fallback_and_runs_the_actions(session_type):
    state = make_state(Phase.WAITING_VALIDATION, session_type)
    new, effects = transition(state, ev(Event.VALIDATION_RECEIVED, approved=True))
    assert new.phase is Phase.EXECUTING_ACTIONS
    assert kinds(effects) == ["remove_fallback", "execute_actions"]
    assert new.waiting_context is None


def test_rejected_validation_in_chat_returns_to_idle_and_keeps_the_fallback():
    state = make_state(Phase.WAITING_VALIDATION, SessionType.CHAT)
    new, effects = transition(state, ev(Event.VALIDATION_RECEIVED, approved=False))
    assert (new.phase, new.is_active, new.waiting_context) == (Phase.IDLE, True, None)
    assert "remove_fallback" not in kinds(effects)
    assert "execute_actions" not in kinds(effects)


def test_rejected_validation_in_automation_tells_the_model_the_actions_were_rejected():
    state = make_state(Phase.WAITING_VALIDATION, SessionType.AUTOMATION)
    new, effects = transition(state, ev(Event.VALIDATION_RECEIVED, approved=False))
    assert new.phase is Phase.CALLING_AI
    assert "remove_fallback" not in kinds(effects)
    (message,) = [e for e in effects if e.kind == "system_message"]
    assert message.data["type"] == SystemMessageType.ACTIONS_EXECUTED
    assert "rejected" in message.data["summary"]


@pytest.mark.parametrize("phase", [Phase.WAITING_VALIDATION, Phase.WAITING_COMMUNICATION_RESPONSE], ids=str)
def test_a_chat_message_during_a_wait_abandons_it(phase):
    state = make_state(phase, SessionType.CHAT)
    new, effects = transition(state, ev(Event.USER_MESSAGE_SENT, text="never mind"))
    assert new.phase is Phase.EXECUTING_ENRICHMENTS
    assert new.waiting_context is None
    assert kinds(effects)[0] == "abandon_waiting"
    assert "execute_enrichments" in kinds(effects)
    assert "remove_fallback" not in kinds(effects)


def test_a_chat_message_from_idle_abandons_nothing():
    new, effects = transition(make_state(Phase.IDLE, SessionType.CHAT), ev(Event.USER_MESSAGE_SENT, text="hi"))
    assert new.phase is Phase.EXECUTING_ENRICHMENTS
    assert "abandon_waiting" not in kinds(effects)


# --- 6. timestamps --------------------------------------------------------------------------------


def test_a_quiet_heartbeat_does_not_count_as_activity():
    state = make_state(Phase.IDLE, SessionType.AUTOMATION)
    new, _ = heartbeat(state, at=T0 + timedelta(minutes=10))
    assert new is state
    assert new.last_event_time == T0


def test_a_whole_chat_conversation_moves_the_user_time_only_on_user_answers():
    loop = Loop(
        SessionType.CHAT,
        lambda n: [
            {"communicationModule": MODULE},
            {"validationRequired": True, "actionCommands": ACTIONS},
            {"dataCommands": DATA},
            {"preText": "done"},
        ][n - 1],
    )
    loop.send(Event.SESSION_ACTIVATION_REQUESTED)
    loop.send(Event.USER_MESSAGE_SENT, text="plan my week")
    assert loop.follow().phase is Phase.WAITING_COMMUNICATION_RESPONSE
    loop.send(Event.COMMUNICATION_RESPONSE_RECEIVED, response="a")
    assert loop.follow().phase is Phase.WAITING_VALIDATION
    loop.send(Event.VALIDATION_RECEIVED, approved=True)
    assert loop.follow().phase is Phase.IDLE

    moved_on = [i.type for b, i, a, _ in loop.history if a.last_user_interaction_time != b.last_user_interaction_time]
    assert moved_on == [Event.USER_MESSAGE_SENT, Event.COMMUNICATION_RESPONSE_RECEIVED, Event.VALIDATION_RECEIVED]
    for _, incoming, after, _ in loop.history:
        if incoming.type in USER_EVENTS:
            assert after.last_user_interaction_time == incoming.at


def test_every_accepted_transition_stamps_its_time():
    loop = Loop(SessionType.AUTOMATION, busy_model)
    loop.send(Event.SESSION_ACTIVATION_REQUESTED)
    loop.follow()
    assert loop.count(Event.AI_RESPONSE_RECEIVED) == Limits().automation_max_autonomous_roundtrips
    for _, incoming, after, _ in loop.history:
        assert after.last_event_time == incoming.at, incoming.type
