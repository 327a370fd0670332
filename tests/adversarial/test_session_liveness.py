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
import subprocess
import time
from datetime import timedelta

import pytest
from kombu import pools as kombu_pools

from governance.celery import app
from sessions.models import AISession, Automation
from tests.processes import BASE_DIR, PYTHON, database_url_of_tests, process_env, wait_for

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

DEADLINE_SECONDS = 2
DEADLINES = f"CALLING_AI={DEADLINE_SECONDS},EXECUTING_ACTIONS={DEADLINE_SECONDS}"
ACTION = {"type": "mcp__supabase__execute_sql", "params": {"query": "select 1"}}


@pytest.fixture
def worker(tmp_path, settings):
    """A real worker on the test database, with the same short deadlines as this process."""
    settings.SESSION_PHASE_DEADLINES = DEADLINES
    child_env = process_env(tmp_path / "var", DATABASE_URL=database_url_of_tests(), SESSION_PHASE_DEADLINES=DEADLINES)
    saved = app.conf.task_default_queue, app.conf.broker_url, dict(app.conf.broker_transport_options or {})
    app.conf.task_default_queue = child_env["CELERY_QUEUE"]
    app.conf.broker_url = child_env["CELERY_BROKER_URL"]
    if child_env["CELERY_BROKER_URL"].startswith("filesystem"):
        folder = str(tmp_path / "var" / "celery" / "queue")
        app.conf.broker_transport_options = {"data_folder_in": folder, "data_folder_out": folder}
    log = open(tmp_path / "worker.log", "w")  # noqa: SIM115  (closed below)
    process = subprocess.Popen(
        [PYTHON, "-m", "celery", "-A", "governance", "worker", "--loglevel", "INFO", "--concurrency", "2"],
        cwd=BASE_DIR, env=child_env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        assert wait_for(lambda: "ready" in (tmp_path / "worker.log").read_text(), timeout=60)
        yield tmp_path / "worker.log"
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()
        app.conf.task_default_queue, app.conf.broker_url, app.conf.broker_transport_options = saved
        app.pool.force_close_all()
        # A closed pool refuses every later send of this process: start new ones.
        app._pool = None
        app.amqp._producer_pool = None
        kombu_pools.reset()


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
    from sessions import scheduler

    scheduler.tick()
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
