"""The AI session state machine's watchdog (seed 003, sections 5 and 8): which sessions an inactivity
timeout closes and which it never touches, and the activity timestamps it measures from. Pure
transitions, no database.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from sessions.machine import Effect, EndReason, Event, Limits, Phase, SessionType, State, SystemMessageType, transition
from tests.sessions.machine_states import (
    ACTIONS,
    ACTIVE_PHASES,
    DATA,
    MODULE,
    NON_TERMINAL,
    STEP,
    T0,
    TYPES,
    USER_EVENTS,
    Loop,
    busy_model,
    ev,
    kinds,
    make_state,
    messages,
)

# --- Watchdog -------------------------------------------------------------------------------------

LONG_AGO = T0 - timedelta(days=2)
HEARTBEAT_AT = T0 + STEP


def heartbeat(state: State, limits: Limits | None = None, at: datetime = HEARTBEAT_AT) -> tuple[State, list[Effect]]:
    """The scheduler's heartbeat, the event on which the watchdog looks at a session."""
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


# --- Activity timestamps --------------------------------------------------------------------------


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
