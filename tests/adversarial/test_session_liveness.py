"""A dead agent never holds its slot past the phase's deadline.

The agent starts an automation, then goes silent: once while its model call is due (CALLING_AI),
once half-way through its actions (EXECUTING_ACTIONS). Nothing but a real Celery worker runs the
deadline timers, with deadlines of a few seconds. The test measures how long the dead agent's
session held the slot (from entering the phase to giving the slot up, as the database records
both) and prints the longest: the figure is the deadline plus the timer's lateness.

When the broker loses the timer, the scheduler tick (every 5 minutes) is the backstop: the hold
is then at most the deadline plus one tick period (tests/sessions/test_phase_deadlines.py)."""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest

from sessions.models import AISession, Automation
from tests.support.processes import celery_worker, wait_for

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

DEADLINE_SECONDS = 2
DEADLINES = f"CALLING_AI={DEADLINE_SECONDS},EXECUTING_ACTIONS={DEADLINE_SECONDS}"
ACTION = {"type": "mcp__supabase__execute_sql", "params": {"query": "select 1"}}


@pytest.fixture
def worker(tmp_path, settings):
    """A real worker on the test database, with the same short deadlines as this process."""
    settings.SESSION_PHASE_DEADLINES = DEADLINES
    with celery_worker(tmp_path, wait_ready=True, SESSION_PHASE_DEADLINES=DEADLINES) as log:
        yield log


def resumed(session_id) -> AISession | None:
    from sessions import scheduler

    scheduler.tick()
    session = AISession.objects.get(pk=session_id)
    return session if session.is_active else None


def released(session_id) -> AISession | None:
    session = AISession.objects.get(pk=session_id)
    return session if not session.is_active else None


def test_a_dead_agent_never_holds_its_slot_past_the_deadline(worker, vlevel_api, capsys):
    body = {"name": "Nightly fix", "messages": [{"text": "Fix what broke"}], "trigger": "MANUAL"}
    automation = Automation.objects.get(pk=vlevel_api.post("/automations", body).json()["id"])
    holds: dict[str, float] = {}

    # 1. Dead while its model call is due.
    started = time.monotonic()
    session_id = vlevel_api.post(f"/automations/{automation.pk}/execute").json()["sessionId"]
    entered = AISession.objects.get(pk=session_id).phase_deadline_at - timedelta(seconds=DEADLINE_SECONDS)
    gone = wait_for(lambda: released(session_id), timeout=60, interval=0.05)
    wall = time.monotonic() - started
    assert gone is not None, worker.read_text()[-4000:]
    assert (gone.phase, gone.end_reason) == ("CALLING_AI", "NETWORK_ERROR")
    holds["CALLING_AI"] = (gone.messages.get(system_type="NETWORK_ERROR").timestamp - entered).total_seconds()
    assert wall >= DEADLINE_SECONDS

    # 2. Dead half-way through its actions (the session resumes first: the agent was back briefly).
    AISession.objects.filter(pk=session_id).update(queued_at=None)
    # The tick skips an agent whose row a worker still holds (it may be finishing the release),
    # as the periodic tick would, and fills the slot on a later pass: tick until it resumed.
    assert wait_for(lambda: resumed(session_id), timeout=20, interval=0.1) is not None, worker.read_text()[-4000:]
    content = json.dumps({"preText": "Fixing.", "actionCommands": [ACTION, ACTION]})
    response = vlevel_api.post(
        f"/sessions/{session_id}/events", {"type": "AIResponseReceived", "payload": {"content": content}}
    )
    assert response.json()["state"]["phase"] == "EXECUTING_ACTIONS", response.json()
    entered = AISession.objects.get(pk=session_id).phase_deadline_at - timedelta(seconds=DEADLINE_SECONDS)
    gone = wait_for(lambda: released(session_id), timeout=60, interval=0.05)
    assert gone is not None, worker.read_text()[-4000:]
    assert (gone.phase, gone.end_reason) == ("EXECUTING_ACTIONS", "NETWORK_ERROR")
    holds["EXECUTING_ACTIONS"] = (gone.messages.get(system_type="SESSION_TIMEOUT").timestamp - entered).total_seconds()

    longest = max(holds.values())
    with capsys.disabled():
        print(
            f"\n[liveness] deadline {DEADLINE_SECONDS} s; slot held by the dead agent: {holds}; longest {longest:.2f} s"
        )
    # The timer fires at the deadline; the worker picks it up within a second or two.
    assert all(DEADLINE_SECONDS <= seconds < DEADLINE_SECONDS + 3 for seconds in holds.values()), holds
