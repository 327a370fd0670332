"""A hosted automation driven by Celery: beat's tick starts it, a real worker calls the (scripted)
provider, runs its data query, and carries it through completion to COMPLETED.

Scripted profiles are server-side only, so the test sets it up as the server would (the system
actor), like the demo loader does; no API caller can name one."""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from governance.kernel.principals import SYSTEM
from sessions import automations, profiles, scheduler
from sessions.models import AISession, Automation, ProviderCall
from tests.support.hosted import PROFILE, allow_profiles, hosted_run, local_profile, openai_answer
from tests.support.processes import celery_worker, wait_for

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

SCRIPT = [
    json.dumps({"preText": "Let me look at recent jobs.", "dataCommands": [{"type": "JOBS", "params": {}}]}),
    json.dumps({"preText": "Nothing to fix today.", "completed": True}),
]


@pytest.fixture
def worker(tmp_path):
    """A real Celery worker on the test database; this process sends to the same queue."""
    with celery_worker(tmp_path) as log:
        yield log


def test_a_scheduled_hosted_automation_runs_to_completed(worker, vlevel):
    profiles.create_profile(actor=SYSTEM, name="daily-script", provider="scripted", options={"responses": SCRIPT})
    created = automations.create_automation(
        vlevel,
        actor=SYSTEM,
        name="Daily check",
        messages=[{"text": "Check yesterday's jobs and tell me if anything needs fixing."}],
        trigger="SCHEDULED",
        interval_minutes=60,
        profile_name="daily-script",
    )
    Automation.objects.update(next_run_at=timezone.now() - timedelta(seconds=1))

    assert scheduler.tick()["started"] == 1

    def finished():
        session = AISession.objects.filter(automation_id=created.pk).first()
        return session if session and session.phase == "COMPLETED" else None

    session = wait_for(finished, timeout=90)
    assert session is not None, worker.read_text()[-5000:]
    assert session.end_reason == "COMPLETED"
    assert session.trigger == "SCHEDULED"
    assert session.total_roundtrips == 2
    kinds = [(m.sender, m.system_type) for m in session.messages.order_by("seq")]
    assert kinds == [("USER", ""), ("AI", ""), ("SYSTEM", "DATA_ADDED"), ("AI", "")]
    assert session.tokens_used["output"] > 0


def test_a_hosted_call_the_broker_lost_is_sent_again_past_its_deadline(request, vlevel):
    """The call_provider message goes where no worker reads (the broker "lost" it); the session
    rests in CALLING_AI. The tick past the phase's deadline sends the call again, and a real worker
    carries the session to COMPLETED."""
    profiles.create_profile(actor=SYSTEM, name="lossy-script", provider="scripted", options={"responses": SCRIPT})
    created = automations.create_automation(
        vlevel,
        actor=SYSTEM,
        name="Lossy",
        messages=[{"text": "Check jobs."}],
        trigger="SCHEDULED",
        interval_minutes=60,
        profile_name="lossy-script",
    )
    Automation.objects.update(next_run_at=timezone.now() - timedelta(seconds=1))
    assert scheduler.tick()["started"] == 1  # before any worker: the call goes to this run's idle queue
    session = AISession.objects.get(automation_id=created.pk)
    assert (session.phase, session.is_active) == ("CALLING_AI", True)
    worker = request.getfixturevalue("worker")

    assert scheduler.tick(now=session.phase_deadline_at - timedelta(seconds=1))["deadlines"] == 0
    assert scheduler.tick(now=session.phase_deadline_at + timedelta(seconds=1))["deadlines"] == 1

    def finished():
        current = AISession.objects.get(pk=session.pk)
        return current if current.phase == "COMPLETED" else None

    done = wait_for(finished, timeout=90)
    assert done is not None, worker.read_text()[-5000:]
    assert (done.end_reason, done.total_roundtrips) == ("COMPLETED", 2)


def test_a_slow_model_past_the_phase_deadline_is_called_once(tmp_path, settings, vlevel_api, model_server):
    """The model takes 4 s, the CALLING_AI deadline is 1 s: every deadline re-queues the call (the
    broker may have lost it), and a real worker picks each one up while the first call is still
    under way. The model is asked once; the session gets its one answer."""
    deadlines = "CALLING_AI=1"
    settings.SESSION_PHASE_DEADLINES = deadlines
    local_profile(model_server.url)
    allow_profiles("agent.seo.vlevel", PROFILE)
    model_server.body = openai_answer(json.dumps({"preText": "Done.", "completed": True}))
    model_server.delay = 4.0

    with celery_worker(tmp_path, wait_ready=True, SESSION_PHASE_DEADLINES=deadlines) as log:
        session_id = hosted_run(vlevel_api)

        def answered():
            session = AISession.objects.get(pk=session_id)
            return session if session.phase not in ("CALLING_AI", "IDLE") else None

        session = wait_for(answered, timeout=60, interval=0.1)
        assert session is not None, log.read_text()[-5000:]
        time.sleep(2)  # deadline tasks still queued find nothing to do
        calls = log.read_text().count("call already in flight")

    assert len(model_server.received) == 1
    assert calls >= 2, "the deadline re-queued the call while it was under way"
    assert session.messages.filter(sender="AI").count() == 1
    assert ProviderCall.objects.get(session_id=session_id).attempts == 1
