"""A hosted model call is made once per turn, and a provider that asks to wait is waited for.

The model is a real HTTP server on 127.0.0.1 (tests/support/hosted.py) that counts what it receives: the
count is what the operator pays for. States a dead worker leaves behind (an answer stored but not
applied, a call started and never finished) are set up as the database would hold them.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from django.db import connection
from django.utils import timezone

from governance.kernel.principals import SYSTEM
from sessions import hosted
from sessions.machine import MAX_NETWORK_RETRY_DELAY
from sessions.models import AISession, ProviderCall
from sessions.providers.http import retry_after_seconds
from tests.support.hosted import PROFILE, allow_profiles, hosted_run, local_profile, openai_answer

pytestmark = pytest.mark.django_db

ANSWER = '{"preText": "Looked at it.", "completed": true}'


@pytest.fixture
def session_id(vlevel_api, model_server) -> str:
    """A hosted automation of agent.seo.vlevel waiting in CALLING_AI for the fake model."""
    local_profile(model_server.url)
    allow_profiles("agent.seo.vlevel", PROFILE)
    model_server.body = openai_answer(ANSWER)
    return hosted_run(vlevel_api)


def ai_messages(session_id: str) -> list[str]:
    return list(
        AISession.objects.get(pk=session_id).messages.filter(sender="AI").values_list("ai_message_json", flat=True)
    )


def current_turn(session_id: str) -> int:
    return AISession.objects.get(pk=session_id).messages.order_by("-seq").values_list("seq", flat=True)[0]


# --- exactly once -----------------------------------------------------------------------------------


def test_a_call_is_recorded_with_its_answer_before_the_session_gets_it(session_id, model_server):
    outcome = hosted.call_provider(session_id, actor=SYSTEM)

    call = ProviderCall.objects.get(session_id=session_id)
    assert outcome == "answered"
    assert len(model_server.received) == 1
    assert (call.status, call.attempts, call.content) == ("answered", 1, ANSWER)
    assert call.tokens == {"input": 11, "output": 7, "cacheWrite": 0, "cacheRead": 0}
    assert ai_messages(session_id) == [ANSWER]


def test_a_task_delivered_again_after_the_answer_was_applied_calls_nobody(session_id, model_server):
    hosted.call_provider(session_id, actor=SYSTEM)

    assert hosted.call_provider(session_id, actor=SYSTEM) == "skipped"

    assert len(model_server.received) == 1
    assert ai_messages(session_id) == [ANSWER]


def test_an_answer_stored_by_a_worker_that_died_is_applied_without_asking_again(session_id, model_server):
    """The worker stored the answer, then died before the session had it: the redelivered task
    applies the stored answer, and the model is not paid a second time."""
    ProviderCall.objects.create(
        session_id=session_id,
        turn=current_turn(session_id),
        status="answered",
        attempts=1,
        started_at=timezone.now() - timedelta(seconds=5),
        finished_at=timezone.now(),
        content=ANSWER,
        tokens={"input": 3, "output": 4, "cacheWrite": 0, "cacheRead": 0},
    )

    assert hosted.call_provider(session_id, actor=SYSTEM) == "answered"

    assert model_server.received == []
    assert ai_messages(session_id) == [ANSWER]
    assert AISession.objects.get(pk=session_id).tokens_used["output"] == 4


def test_a_second_task_while_the_call_is_in_flight_leaves_it_alone(session_id, model_server):
    """The phase deadline (2 minutes) re-queues the call while a slow provider is still thinking:
    the second task must not call as well."""
    ProviderCall.objects.create(
        session_id=session_id,
        turn=current_turn(session_id),
        status="calling",
        attempts=1,
        started_at=timezone.now() - timedelta(seconds=130),
    )

    assert hosted.call_provider(session_id, actor=SYSTEM) == "in flight"

    assert model_server.received == []
    assert AISession.objects.get(pk=session_id).phase == "CALLING_AI"


def test_a_call_whose_worker_is_surely_gone_is_made_again(session_id, model_server):
    """Started longer ago than the task's hard time limit: that worker was killed; call again."""
    ProviderCall.objects.create(
        session_id=session_id,
        turn=current_turn(session_id),
        status="calling",
        attempts=1,
        started_at=timezone.now() - hosted.CALL_LEASE - timedelta(seconds=1),
    )

    assert hosted.call_provider(session_id, actor=SYSTEM) == "answered"

    call = ProviderCall.objects.get(session_id=session_id)
    assert len(model_server.received) == 1
    assert (call.status, call.attempts) == ("answered", 2)
    assert ai_messages(session_id) == [ANSWER]


@pytest.mark.django_db(transaction=True)
def test_simultaneous_tasks_for_one_turn_call_the_model_once(session_id, model_server):
    """Four tasks for the same turn at the same time (a redelivery, a deadline re-queue...), each
    on its own database connection, against a provider that takes a second to answer."""
    model_server.delay = 1.0
    outcomes: list[str] = []
    start = threading.Barrier(4)

    def task() -> None:
        start.wait()
        try:
            outcomes.append(hosted.call_provider(session_id, actor=SYSTEM))
        finally:
            connection.close()

    threads = [threading.Thread(target=task) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert sorted(outcomes) == ["answered", "in flight", "in flight", "in flight"]
    assert len(model_server.received) == 1
    assert ai_messages(session_id) == [ANSWER]
    assert ProviderCall.objects.get(session_id=session_id).attempts == 1


def test_every_turn_gets_its_own_call(vlevel_api, model_server):
    """A format error sends the model the same session again, one message longer: a new turn, so
    a new call, not the stored answer of the last one."""
    local_profile(model_server.url)
    allow_profiles("agent.seo.vlevel", PROFILE)
    model_server.body = openai_answer("not json at all")
    session_id = hosted_run(vlevel_api)

    hosted.call_provider(session_id, actor=SYSTEM)
    session = AISession.objects.get(pk=session_id)
    assert session.phase == "CALLING_AI", session.phase
    model_server.body = openai_answer(ANSWER)
    assert hosted.call_provider(session_id, actor=SYSTEM) == "answered"

    calls = list(ProviderCall.objects.filter(session_id=session_id).values_list("turn", "attempts", "status"))
    assert len(model_server.received) == 2
    assert len(calls) == 2
    assert calls[0][0] < calls[1][0]
    assert [(attempts, status) for _, attempts, status in calls] == [(1, "answered"), (1, "answered")]


# --- Retry-After ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "waits"),
    [
        ({"retry-after": "120"}, 120),
        ({"retry-after": "5"}, 30),  # never sooner than the seed's 30 s
        ({}, 30),
        ({"retry-after": "999999"}, int(MAX_NETWORK_RETRY_DELAY.total_seconds())),
        ({"retry-after": "soon"}, 30),
    ],
    ids=["seconds", "below-30s", "absent", "capped", "unreadable"],
)
def test_a_rate_limited_automation_waits_as_long_as_the_provider_asked(session_id, model_server, header, waits):
    model_server.status, model_server.body, model_server.headers = 429, {"error": {"message": "slow down"}}, header
    before = timezone.now()

    assert hosted.call_provider(session_id, actor=SYSTEM) == "NetworkErrorOccurred"

    session = AISession.objects.get(pk=session_id)
    assert (session.phase, session.timer_event) == ("WAITING_NETWORK_RETRY", "NetworkAvailable")
    assert before + timedelta(seconds=waits) <= session.timer_at <= timezone.now() + timedelta(seconds=waits)
    notice = session.messages.get(system_type="NETWORK_ERROR").system_message["summary"]
    assert notice.startswith("AI provider error: http_status (HTTP 429)")
    assert (f"next attempt in {waits} s" in notice) is (waits != 30)
    assert "slow down" not in notice  # the provider's own words stay in the server log
    call = ProviderCall.objects.get(session_id=session_id)
    assert (call.status, call.error) == ("failed", "AI provider error: http_status (HTTP 429)")


def test_an_http_date_retry_after_is_honoured_on_503(session_id, model_server):
    later = datetime.now(UTC) + timedelta(minutes=5)
    model_server.status, model_server.body = 503, {"error": {"message": "overloaded"}}
    model_server.headers = {"retry-after": format_datetime(later, usegmt=True)}

    hosted.call_provider(session_id, actor=SYSTEM)

    session = AISession.objects.get(pk=session_id)
    assert session.phase == "WAITING_NETWORK_RETRY"
    assert abs((session.timer_at - later).total_seconds()) <= 2


def test_retry_after_is_not_read_from_a_permanent_refusal(session_id, model_server):
    """A 401 ends the session whatever it says about waiting: retrying would fail the same way."""
    model_server.status, model_server.body, model_server.headers = 401, {"error": {}}, {"retry-after": "60"}

    assert hosted.call_provider(session_id, actor=SYSTEM) == "SystemErrorOccurred"

    session = AISession.objects.get(pk=session_id)
    assert (session.phase, session.pending_end_reason) == ("AWAITING_SESSION_CLOSURE", "ERROR")
    assert session.timer_event == "SessionCompleted"


def test_an_agent_reports_its_own_providers_retry_after(vlevel_api):
    created = vlevel_api.post("/automations", {"name": "n", "trigger": "MANUAL", "messages": [{"text": "go"}]})
    session_id = vlevel_api.post(f"/automations/{created.json()['id']}/execute").json()["sessionId"]
    before = timezone.now()

    response = vlevel_api.post(
        f"/sessions/{session_id}/events", {"type": "NetworkErrorOccurred", "payload": {"retryAfter": 90}}
    )

    assert response.status_code == 200, response.content
    session = AISession.objects.get(pk=session_id)
    assert session.phase == "WAITING_NETWORK_RETRY"
    assert session.timer_at >= before + timedelta(seconds=90)


@pytest.mark.parametrize("value", [-1, "ninety", 1.5, [90]])
def test_a_retry_after_that_is_not_whole_seconds_is_422_with_its_path(vlevel_api, value):
    created = vlevel_api.post("/automations", {"name": "n", "trigger": "MANUAL", "messages": [{"text": "go"}]})
    session_id = vlevel_api.post(f"/automations/{created.json()['id']}/execute").json()["sessionId"]

    response = vlevel_api.post(
        f"/sessions/{session_id}/events", {"type": "NetworkErrorOccurred", "payload": {"retryAfter": value}}
    )

    assert response.status_code == 422, response.content
    assert [error["loc"] for error in response.json()["errors"]] == [["body", "payload", "retryAfter"]]
    assert AISession.objects.get(pk=session_id).phase == "CALLING_AI"


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("0", 0),
        ("42", 42),
        (" 42 ", 42),
        ("Wed, 25 Nov 2026 10:00:30 GMT", 30),
        ("Wed, 25 Nov 2026 09:59:00 GMT", 0),
        ("", None),
        (None, None),
        ("-5", None),
        ("tomorrow", None),
        ("1.5", None),
    ],
)
def test_retry_after_header_forms(value, seconds):
    now = datetime(2026, 11, 25, 10, 0, 0, tzinfo=UTC)
    assert retry_after_seconds(value, now=now) == seconds


def test_a_profile_timeout_past_the_task_limit_is_refused(admin_api):
    body = {"name": "slow", "provider": "openai", "model": "m", "baseUrl": "https://93.184.216.34/v1"}

    response = admin_api.post("/automations/provider-profiles", {**body, "options": {"timeout": 600}})

    assert response.status_code == 422, response.content
    assert response.json()["errors"][0]["loc"] == ["body", "options", "timeout"]
    assert "at most 180" in response.json()["errors"][0]["msg"]
