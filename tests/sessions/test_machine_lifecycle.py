"""The AI session state machine over a session's life (seed 003, sections 5-8 and 12): waiting for
a person (a communication module, a validation), network retries, closing with a reason, stopping,
suspending and resuming. Pure transitions, no database.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from sessions.machine import (
    EndReason,
    Event,
    Phase,
    SessionType,
    State,
    SystemMessageType,
    TransitionRefused,
    transition,
)
from tests.sessions.machine_states import (
    ACTIONS,
    MODULE,
    NON_TERMINAL,
    RUNNING,
    STEP,
    T0,
    TYPES,
    VALIDATION_CONTEXT,
    ev,
    kinds,
    make_state,
)

# --- Waits, network retries, closures, suspension -------------------------------------------------


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


# --- Validation and abandoned waits ---------------------------------------------------------------


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
