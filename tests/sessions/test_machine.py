"""The AI session state machine's transition table (seed 003, sections 1 and 7): every (phase, event)
pair is accepted exactly when the table has it, active or not, and each accepted pair leads to the
expected phase and effects. Pure transitions, no database.

The machine's other behaviours have files of their own: test_machine_lifecycle.py (waits, network
retries, closures, suspension), test_machine_round_trips.py (the round-trip limits) and
test_machine_watchdog.py (inactivity timeouts and activity timestamps). The expectations come
from the seed and from the "Decision:" notes of ``sessions/machine.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from sessions.machine import (
    TABLE,
    Effect,
    EndReason,
    Event,
    InvalidPayload,
    Phase,
    SessionType,
    State,
    SystemMessageType,
    TransitionRefused,
    allowed,
    transition,
)
from tests.sessions.machine_states import (
    ACTIONS,
    DATA,
    MODULE,
    NON_TERMINAL,
    RUNNING,
    TYPES,
    USER_EVENTS,
    ev,
    kinds,
    make_state,
    messages,
)

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
            ("check_completion", "schedule"),
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
        "automation-ignores-communication-and-queries-data",
        Row(
            P.PARSING_AI_RESPONSE,
            E.AI_RESPONSE_PARSED,
            A,
            {"communicationModule": MODULE, "dataCommands": DATA},
            P.EXECUTING_DATA_QUERIES,
            ("execute_data_queries",),
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
    (
        "automation-completion-rejected-says-why",
        Row(
            P.WAITING_COMPLETION_CONFIRMATION,
            E.COMPLETION_REJECTED,
            A,
            {"reason": "work left"},
            P.CALLING_AI,
            ("system_message", "call_ai"),
            (FORMAT_ERROR,),
        ),
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
