"""kill -9 of a worker in the middle of a batch: no effect is lost, none is doubled.

A real Celery worker (concurrency 2) works through one batch of the platform's tasks:

* ``memory.embed``: learnings imported in chunks (one task per chunk of 20), against a slow
  Ollama stand-in (40 ms a text) that counts the texts it is asked to embed;
* ``memory.compute_reuse_scores`` and ``memory.promote`` over learnings with injections and
  gate-8 GOs;
* ``sessions.tick`` over agents whose SCHEDULED automation is due;
* ``agents.sweep_jobs`` over jobs whose lease expired.

The test SIGKILLs the worker's whole process group (main process and pool children) while the
first tick is inside its batch of agents (held there by an automation row the test locks) and an
embedding task runs in the other slot, queues
more of the same work while no worker runs, then starts a new worker on the same queue and waits
until every task it queued has run.

Redelivery: with ``acks_late`` the dead worker's messages stay unacknowledged in Redis, and kombu
gives them back once they are older than the visibility timeout, when a worker starts (after
that only about every 100 s: ``unacked_restore_interval * unacked_restore_throttle``). So the
workers run with a ``CELERY_VISIBILITY_TIMEOUT`` of a few seconds, every task of the batch stays
well under it (a live worker's task would otherwise be handed out twice), and the restart comes
once it has passed. The test uses a Redis database of its own: the unacknowledged index is per
database, shared by every queue in it, and a worker with so short a timeout would hand out again
the long or delayed (eta) tasks of any other worker on it (a `make run`, another test's worker).
The filesystem broker cannot redeliver at all (it deletes a message as it hands it out).

Then, per effect: every learning has exactly one vector, of its current text, and no text was
sent to the embedding server again once its vector was stored; the reuse scores equal a fresh
full computation; every eligible learning has exactly one open promotion proposal and one inbox
item; every due automation started exactly one run, for its due time; every expired lease was
handled (re-queued) exactly once. The figures are printed."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections import Counter
from datetime import timedelta
from decimal import Decimal

import psycopg
import pytest
from celery.signals import after_task_publish
from django.db import connection
from django.db.models import F
from django.utils import timezone
from kombu import Connection, Exchange, Queue

from agents.jobs import leases
from agents.models import Job
from agents.registry import load_manifest
from controlplane.celery import app
from governance.kernel import env
from governance.kernel.models import AuditEvent, TaskRun
from governance.kernel.principals import SYSTEM, Principal
from governance.kernel.taskruns import WORKER_LOST
from governance.reviews.models import ReviewItem
from memory import scoring, transfer
from memory.lifecycle import REVIEW_KIND
from memory.models import Embedding, GateResult, Learning, LearningInjection, PromotionProposal, ReuseScore
from memory.scope import PROMOTE_TO_DOMAIN
from sessions import hosted, scheduler
from sessions.automations import create_automation
from sessions.models import AISession, Automation, ProviderCall
from tests.support.hosted import PROFILE, allow_profiles, hosted_run, local_profile, openai_answer
from tests.support.http_servers import SlowOllama, serving
from tests.support.jobs import submit_job
from tests.support.manifests import manifest_text
from tests.support.processes import celery_worker_process, sending_to, wait_for

# One xdist worker runs these tests one after the other: they share Redis database 11, where a
# short visibility timeout would hand one test's unacknowledged tasks to the other's worker.
pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True), pytest.mark.xdist_group("redis-db-11")]

BROKER = "redis://127.0.0.1:6379/11"  # a database of this test's own (see the docstring)
VISIBILITY_TIMEOUT = 5
MODEL, DIMENSION = "crash-test-embed", 16
EMBED_SECONDS = 0.04  # per text, at the stand-in: a task of CHUNK texts takes about 1 s
CHUNK = 20
AGENTS = 12
JOBS = 6


def import_learnings(first: int, chunks: int) -> list[Learning]:
    """New learnings through the import, which queues one memory.embed task per CHUNK rows."""
    lines = [
        json.dumps(
            {
                "story": f"CR-{n % 30}",
                "gate": 1 + n % 3,
                "domain": "seo",
                "project": "shop",
                "tags": [f"t{n % 2}"],
                "text": f"crash learning {n}: cache the sitemap before the crawl",
            }
        )
        for n in range(first, first + chunks * CHUNK)
    ]
    report = transfer.import_learnings(lines, source="crash.jsonl", actor=SYSTEM, warn=lambda _: None)
    assert report.created == len(lines), report
    return list(Learning.objects.order_by("pk")[first : first + len(lines)])


def inject(learnings: list[Learning], wave: int) -> None:
    """Injections of these learnings into a few stories, then gate-8 GOs for some of the stories."""
    now = timezone.now()
    LearningInjection.objects.bulk_create(
        LearningInjection(
            learning=learning,
            story=f"W{wave}-S{(n + k) % 7}",
            domain=("seo", "rag", "ops")[k % 3],
            project="shop",
            at=now - timedelta(minutes=10 - k),
        )
        for n, learning in enumerate(learnings)
        for k in range(1 + n % 3)
    )
    GateResult.objects.bulk_create(GateResult(story=f"W{wave}-S{s}", gate=8, verdict="GO", at=now) for s in (0, 2, 4))


def waiting_for(holder: psycopg.Connection) -> int:
    """How many database sessions wait for a lock ``holder`` holds."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))", [holder.info.backend_pid]
        )
        return cursor.fetchone()[0]


def due_automations(count: int, *, now) -> list[int]:
    """Agents with one SCHEDULED automation each, created a while ago (first run tomorrow)."""
    automations = []
    for n in range(count):
        text = manifest_text("agent.seo.architect", id=f"agent.crash.a{n:02d}")
        agent = load_manifest(text, actor=SYSTEM)[0].agent
        automation = create_automation(
            agent,
            actor=SYSTEM,
            name=f"Nightly {n}",
            trigger=Automation.Trigger.SCHEDULED,
            interval_minutes=60,
            messages=[{"text": "Check the pages"}],
            first_run_at=now + timedelta(days=1),
        )
        automations.append(automation.pk)
    return automations


def expired_leases(agent, count: int, *, now) -> list[str]:
    """Jobs leased by a worker that died: their lease expired a second ago."""
    ids = []
    for n in range(count):
        job = submit_job(agent, {"urls": [f"https://example.com/{n}"], "depth": 1}, key=f"crash-{n}")
        ids.append(str(leases.claim_lease(job, actor=Principal(agent=agent), owner="dead-worker").pk))
    Job.objects.filter(pk__in=ids).update(lease_expires_at=now - timedelta(seconds=1))
    return ids


def scores() -> dict[tuple, tuple]:
    rows = ReuseScore.objects.values_list(
        "story", "gate", "tags_hash", "nb_injections", "nb_stories_gate8_go", "nb_domains", "reuse_score"
    )
    return {row[:3]: row[3:] for row in rows}


def drop_queue(name: str) -> None:
    """Delete the queue (what the second worker gave back at its warm shutdown, delayed timers of
    the sessions) and its binding, as Celery declared them."""
    with Connection(BROKER) as conn:
        queue = Queue(name, Exchange(name), routing_key=name)(conn.default_channel)
        queue.declare()
        queue.delete()


def finished_task_ids() -> set[str]:
    """Task ids with a run that finished (a run its worker died in is closed as failed when the
    task is delivered again: that is not finishing)."""
    finished = TaskRun.objects.exclude(finished_at=None).exclude(error=WORKER_LOST)
    return set(finished.values_list("task_id", flat=True))


def test_a_worker_killed_in_the_middle_of_a_batch_loses_nothing_and_doubles_nothing(
    tmp_path, capsys, monkeypatch, vlevel
):
    if not env.redis_answers():
        pytest.skip("no Redis: the filesystem broker deletes a message as it hands it out, so nothing is redelivered")
    monkeypatch.setattr(transfer, "EMBED_BATCH", CHUNK)
    now = timezone.now()
    # Created before the batch (their own tasks go to this run's test queue, never consumed).
    automations = due_automations(AGENTS, now=now)
    job_ids = expired_leases(vlevel, JOBS, now=now)

    published: dict[str, str] = {}  # task id -> name, for every task this process queues

    def on_publish(sender=None, headers=None, **_):
        published[headers["id"]] = headers["task"]

    embedder = SlowOllama(seconds=EMBED_SECONDS, dimension=DIMENSION)
    queue = f"test-crash-{uuid.uuid4().hex[:8]}"
    worker_env = {
        "CELERY_QUEUE": queue,
        "CELERY_BROKER_URL": BROKER,
        "CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT),
        "EMBEDDING_BACKEND": "ollama",
        "EMBEDDING_MODEL": MODEL,
        "EMBEDDING_DIMENSION": str(DIMENSION),
    }
    runs = AISession.objects.filter(automation__in=automations, trigger=Automation.Trigger.SCHEDULED)
    after_task_publish.connect(on_publish, weak=False, dispatch_uid="crash-test")
    try:
        with serving(embedder.handler()) as url, sending_to(queue, BROKER):
            worker_env["EMBEDDING_URL"] = url
            # The batch, queued in this order before the worker starts.
            first = import_learnings(0, 5)
            inject(first[: 3 * CHUNK], wave=1)
            app.send_task("memory.compute_reuse_scores")
            due = timezone.now().replace(microsecond=0) - timedelta(seconds=1)
            Automation.objects.filter(pk__in=automations).update(next_run_at=due)  # time passed: they are due
            app.send_task("sessions.tick")
            import_learnings(5 * CHUNK, 3)
            for name in ("agents.sweep_jobs", "sessions.tick", "memory.promote", "agents.sweep_jobs"):
                app.send_task(name)
            import_learnings(8 * CHUNK, 3)
            app.send_task("memory.compute_reuse_scores")
            queued_before = len(published)

            # The tick starts its agents in one transaction per batch (sessions.scheduler._start_batch):
            # an automation row held here keeps the first tick inside its batch, the agents locked and
            # nothing committed, for as long as the test needs to kill it there.
            held = psycopg.connect(**connection.get_connection_params())
            held.execute(f"SELECT 1 FROM {Automation._meta.db_table} WHERE id = %s FOR UPDATE", [automations[-1]])

            def mid_tick() -> list[str] | None:
                """The moment to kill: the tick is inside its batch, waiting on the held row, and
                another task runs."""
                running = list(TaskRun.objects.filter(finished_at=None).values_list("task_name", flat=True))
                if "sessions.tick" in running and len(running) >= 2 and waiting_for(held) == 1:
                    return running
                return None

            try:
                with celery_worker_process(tmp_path, own_group=True, log_name="worker-1.log", **worker_env) as worker:
                    in_flight = wait_for(mid_tick, timeout=60, interval=0.01)
                    worker.kill()
                    killed_at = time.monotonic()
                    assert in_flight, worker.log.read_text()[-4000:]
            finally:
                held.close()  # the row is let go: the next tick is not held

            # What the dead worker left.
            done = len(set(published) & finished_task_ids())
            started_then = runs.count()
            assert started_then == 0  # the batch died with its transaction: all of it or none of it
            vectors = Embedding.objects.filter(kind="learning", model=MODEL)
            stored_then = set(vectors.values_list("object_id", flat=True))
            calls_then = embedder.snapshot()

            # Work that arrives while no worker runs.
            later = import_learnings(11 * CHUNK, 2)
            inject(first[3 * CHUNK :] + later, wave=2)
            for name in ("memory.compute_reuse_scores", "memory.promote", "sessions.tick", "agents.sweep_jobs"):
                app.send_task(name)

            # The restart, once the dead worker's messages are past the visibility timeout.
            time.sleep(max(0.0, killed_at + VISIBILITY_TIMEOUT + 1 - time.monotonic()))
            with celery_worker_process(tmp_path, own_group=True, log_name="worker-2.log", **worker_env) as worker:
                everything_ran = wait_for(lambda: set(published) <= finished_task_ids(), timeout=120, interval=0.2)
                log = worker.log.read_text()[-4000:]
    finally:
        after_task_publish.disconnect(dispatch_uid="crash-test")
        drop_queue(queue)

    never_ran = sorted(published[task_id] for task_id in set(published) - finished_task_ids())
    lost: Counter[str] = Counter()
    doubled: Counter[str] = Counter()

    # Embeddings: one vector per learning, of its current text; none computed again once stored,
    # and the vectors the tasks report writing add up to one per learning.
    texts = dict(Learning.objects.values_list("pk", "text"))
    current = dict(vectors.values_list("object_id", "text_sha256"))
    lost["embed"] = sum(current.get(pk) != hashlib.sha256(text.encode()).hexdigest() for pk, text in texts.items())
    calls = embedder.snapshot()
    again = [pk for pk in stored_then if calls[texts[pk]] > calls_then[texts[pk]]]
    # One successful run per task id: the run its worker died in is recorded as lost (taskruns).
    written = dict(TaskRun.objects.filter(task_name="memory.embed", status="success").values_list("task_id", "result"))
    per_learning = Counter(vectors.values_list("object_id", flat=True))
    doubled["embed"] = len(again) + sum(n - 1 for n in per_learning.values())
    doubled["embed"] += max(0, sum(written.values()) - len(texts))
    recomputed = sum(n - 1 for n in calls.values())  # killed before its commit: computed again, stored once

    # Scores: what the workers stored equals a fresh full computation.
    stored = scores()
    scoring.compute_reuse_scores(full=True)
    fresh = scores()
    for key, value in fresh.items():
        (doubled if key in stored and stored[key][0] > value[0] else lost)["score"] += stored.get(key) != value
    doubled["score"] += len(set(stored) - set(fresh))

    # Promotions: one open proposal and one inbox item per eligible learning.
    threshold = Decimal(str(PROMOTE_TO_DOMAIN))
    eligible = [
        learning.pk
        for learning in Learning.objects.filter(scope=Learning.Scope.STORY)
        if fresh.get((learning.story, learning.gate, learning.tags_hash), (0, 0, 0, Decimal(0)))[3] >= threshold
    ]
    open_proposals = PromotionProposal.objects.filter(status=PromotionProposal.Status.PROPOSED)
    proposals = Counter(open_proposals.values_list("learning_id", flat=True))
    items = Counter(item.payload["learning"] for item in ReviewItem.objects.filter(kind=REVIEW_KIND))
    lost["promote"] = sum(not proposals[pk] or not items[pk] for pk in eligible)
    doubled["promote"] = sum(n - 1 for n in proposals.values()) + sum(n - 1 for n in items.values())

    # Ticks: each due automation started exactly one run, for its due time.
    per_automation = Counter(runs.values_list("automation_id", flat=True))
    lost["tick"] = sum(not per_automation[pk] for pk in automations)
    doubled["tick"] = sum(n - 1 for n in per_automation.values())
    assert runs.filter(scheduled_execution_time=due).count() == runs.count()

    # Sweeps: each expired lease handled once (re-queued; the attempt is not counted again).
    expired = AuditEvent.objects.filter(action="job.lease_expired", target_type="agents.job")
    handled = Counter(expired.values_list("target_id", flat=True))
    lost["sweep"] = sum(not handled[pk] for pk in job_ids)
    doubled["sweep"] = sum(n - 1 for n in handled.values())
    assert set(Job.objects.filter(pk__in=job_ids).values_list("status", "attempts")) == {(Job.Status.QUEUED, 1)}

    attempts = Counter(TaskRun.objects.values_list("task_id", flat=True))
    ran_twice = sorted(published.get(task_id, task_id) for task_id, n in attempts.items() if n > 1)
    failed = list(TaskRun.objects.filter(status="failure").exclude(error=WORKER_LOST).values_list("task_name", "error"))
    # The runs the kill cut short are on record as such, one per task that was in flight.
    cut_short = sorted(TaskRun.objects.filter(status="failure", error=WORKER_LOST).values_list("task_name", flat=True))
    with capsys.disabled():
        print(
            f"\n[crash] queued {len(published)} tasks; killed with {len(in_flight)} in flight (done {done}); "
            f"after restart: lost {sum(lost.values())}, doubled {sum(doubled.values())}\n"
            f"[crash] {queued_before} queued before the kill, {len(published) - queued_before} while down; "
            f"in flight: {', '.join(sorted(in_flight))}; still queued {queued_before - done - len(in_flight)}; "
            f"the tick had started {started_then}/{AGENTS} runs, {len(stored_then)} vectors were stored; "
            f"run again: {', '.join(ran_twice)}; texts embedded again (killed before commit): {recomputed}\n"
            f"[crash] lost {dict(lost)}; doubled {dict(doubled)}; failed tasks: {failed}"
        )
    assert everything_ran, (never_ran, log)
    assert cut_short == sorted(in_flight)
    assert failed == []
    assert sum(lost.values()) == 0, dict(lost)
    assert sum(doubled.values()) == 0, dict(doubled)


def test_a_worker_killed_during_a_model_call_gets_the_turn_answered_once(tmp_path, capsys, vlevel_api, model_server):
    """The worker dies while the model is thinking. The task delivered again finds the call in
    flight and leaves it (that worker could be alive, as far as anyone can tell); once the task's
    hard time limit has passed, the phase deadline makes the call again. The model is asked a
    second time (the first answer died with the worker: paid for, never received), and the turn
    is answered once."""
    if not env.redis_answers():
        pytest.skip("no Redis: the filesystem broker deletes a message as it hands it out, so nothing is redelivered")
    local_profile(model_server.url)
    allow_profiles("agent.seo.vlevel", PROFILE)
    model_server.body = openai_answer(json.dumps({"preText": "Checked.", "completed": True}))
    model_server.delay = 3.0
    queue = f"test-crash-{uuid.uuid4().hex[:8]}"
    worker_env = {
        "CELERY_QUEUE": queue,
        "CELERY_BROKER_URL": BROKER,
        "CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT),
    }

    def answered() -> AISession | None:
        session = AISession.objects.get(pk=session_id)
        return session if session.phase != "CALLING_AI" else None

    try:
        with sending_to(queue, BROKER):
            with celery_worker_process(tmp_path, own_group=True, log_name="hosted-1.log", **worker_env) as worker:
                session_id = hosted_run(vlevel_api)
                assert wait_for(lambda: model_server.received, timeout=30, interval=0.02), worker.log.read_text()
                worker.kill()
                killed_at = time.monotonic()
            call = ProviderCall.objects.get(session_id=session_id)
            assert (call.status, call.attempts) == ("calling", 1)

            time.sleep(max(0.0, killed_at + VISIBILITY_TIMEOUT + 1 - time.monotonic()))
            with celery_worker_process(tmp_path, own_group=True, log_name="hosted-2.log", **worker_env) as worker:
                redelivered = wait_for(lambda: "call already in flight" in worker.log.read_text(), timeout=30)
                assert redelivered, worker.log.read_text()[-4000:]
                asked_after_restart = len(model_server.received)
                # Time passes beyond the task's hard limit (moved in the database, not waited for).
                ProviderCall.objects.filter(pk=call.pk).update(started_at=F("started_at") - hosted.CALL_LEASE)
                deadline = AISession.objects.get(pk=session_id).phase_deadline_at
                assert scheduler.tick(now=deadline + timedelta(seconds=1))["deadlines"] == 1
                session = wait_for(answered, timeout=60, interval=0.1)
                assert session is not None, worker.log.read_text()[-4000:]
    finally:
        drop_queue(queue)

    call.refresh_from_db()
    with capsys.disabled():
        print(
            f"\n[crash] hosted call: killed with 1 call in flight; the redelivered task asked the model "
            f"{asked_after_restart - 1} more time(s), the deadline past the lease once; {len(model_server.received)} "
            f"calls in all; AI messages "
            f"{session.messages.filter(sender='AI').count()}; attempts {call.attempts}"
        )
    assert asked_after_restart == 1  # the redelivered task did not call over a call in flight
    assert len(model_server.received) == 2
    assert session.messages.filter(sender="AI").count() == 1
    assert (call.status, call.attempts) == ("answered", 2)
    assert session.tokens_used["output"] == 7  # the one answer received, counted once
