"""The AI session state machine's round trips (seed 003, section 3): an AUTOMATION stops after its
limit of autonomous round trips however it goes back to the model, a CHAT has none, and the counter
counts AI responses only. Pure transitions, no database.
"""

from __future__ import annotations

from typing import Any

import pytest

from sessions.machine import EndReason, Event, Limits, Phase, SessionType, SystemMessageType, transition
from tests.sessions.machine_states import ACTIONS, DATA, NETWORK_DOWN, Loop, busy_model, ev, kinds, make_state, messages


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
