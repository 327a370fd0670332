"""Tasks go to queues by kind, so a backlog of embeddings never delays the scheduler tick."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import redis
from celery import current_app
from django.core.management import CommandError, call_command

from controlplane.management.commands.serve import role_commands
from governance.kernel import env, queues
from governance.kernel.models import TaskRun
from tests.support.processes import BASE_DIR, database_url_of_tests, process_env, sending_to, wait_for


def test_every_task_has_a_queue_chosen_for_it():
    """A new task must be placed (ROUTES) or left on the default queue on purpose (UNROUTED)."""
    import controlplane.celery  # noqa: F401  (registers every app's tasks)

    current_app.loader.import_default_modules()
    ours = {name for name in current_app.tasks if not name.startswith("celery.")}
    assert ours - set(queues.ROUTES) - queues.UNROUTED == set()
    assert set(queues.ROUTES) - ours == set(), "a route names a task that does not exist"


def test_the_router_names_queues_under_the_instance_s_default_queue(settings):
    router = current_app.amqp.router
    with sending_to("plane-a", current_app.conf.broker_url):
        assert router.route({}, "sessions.tick")["queue"].name == "plane-a.tick"
        assert router.route({}, "memory.embed")["queue"].name == "plane-a.embeddings"
        assert router.route({}, "sessions.call_provider")["queue"].name == "plane-a.providers"
        assert router.route({}, "memory.evict")["queue"].name == "plane-a.maintenance"
        assert router.route({}, "governance.heartbeat")["queue"].name == "plane-a"


def test_serve_roles_start_only_their_processes_on_their_queues(settings):
    settings.CELERY_TASK_DEFAULT_QUEUE = "plane"
    assert list(role_commands("all", host="127.0.0.1", port=8000)) == ["web", "worker", "bulk worker", "beat"]
    assert list(role_commands("web", host="127.0.0.1", port=8000)) == ["web"]
    assert list(role_commands("beat", host="127.0.0.1", port=8000)) == ["beat"]
    workers = role_commands("worker", host="127.0.0.1", port=8000)
    assert _queues_of(workers["worker"]) == "plane,plane.tick,plane.providers"
    assert _queues_of(workers["bulk worker"]) == "plane.embeddings,plane.maintenance"
    only = role_commands("worker", host="127.0.0.1", port=8000, queue_kinds="tick, embeddings")
    assert list(only) == ["worker"]
    assert _queues_of(only["worker"]) == "plane.tick,plane.embeddings"
    with pytest.raises(ValueError, match="unknown queue tik"):
        role_commands("worker", host="127.0.0.1", port=8000, queue_kinds="tik")


def _queues_of(command: list[str]) -> str:
    return command[command.index("--queues") + 1]


def test_an_unknown_queue_is_refused_by_serve_before_anything_starts():
    with pytest.raises(CommandError, match="--queues: unknown queue everything"):
        call_command("serve", "--role", "worker", "--queues", "tick,everything")


@pytest.mark.process
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(not env.redis_answers(), reason="reads queue lengths on Redis; no Redis answers here")
def test_a_backlog_of_embeddings_does_not_delay_the_tick(tmp_path):
    """`serve --role worker` as a host runs it (an interactive and a bulk worker); 3,000 embedding
    tasks wait in their queue, then a tick is sent: it runs at once, long before the backlog is done."""
    child_env = process_env(
        tmp_path / "var", DATABASE_URL=database_url_of_tests(), EMBEDDING_BACKEND="hashing", DEBUG="1"
    )
    queue = child_env["CELERY_QUEUE"]
    broker = redis.Redis.from_url(child_env["CELERY_BROKER_URL"])
    with sending_to(queue, child_env["CELERY_BROKER_URL"]):
        for start in range(0, 3000, 500):
            with current_app.producer_or_acquire() as producer:
                for number in range(start, start + 500):
                    current_app.send_task("memory.embed", args=["learning", [number]], producer=producer)
        assert broker.llen(f"{queue}.embeddings") == 3000

        log = (tmp_path / "serve.log").open("w")
        serve = subprocess.Popen(
            [os.sys.executable, "manage.py", "serve", "--role", "worker"],
            cwd=BASE_DIR,
            env=child_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            assert wait_for(lambda: broker.llen(f"{queue}.embeddings") < 2990, 90), (tmp_path / "serve.log").read_text()
            sent_at = time.time()
            current_app.send_task("sessions.tick")
            ran = wait_for(lambda: TaskRun.objects.filter(task_name="sessions.tick").first(), 60)
            assert ran is not None, (tmp_path / "serve.log").read_text()[-3000:]
            assert ran.started_at.timestamp() - sent_at < 10
            assert broker.llen(f"{queue}.embeddings") > 1000  # the backlog is still there
        finally:
            os.killpg(serve.pid, signal.SIGTERM)
            serve.wait(timeout=60)
            for kind in queues.KINDS:
                broker.delete(queues.queue_name(queue, kind))


def _default_queue(var_dir) -> str:
    """The default queue a process of the instance whose data is in ``var_dir`` uses, CELERY_QUEUE unset."""
    child_env = process_env(var_dir)
    del child_env["CELERY_QUEUE"]
    shown = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; print(settings.CELERY_TASK_DEFAULT_QUEUE)"],
        cwd=BASE_DIR,
        env=child_env,
        capture_output=True,
        text=True,
        check=True,
    )
    return shown.stdout.strip()


def test_two_checkouts_on_one_host_never_share_a_queue_unless_told_to(tmp_path):
    """Both find the same local Redis: without CELERY_QUEUE each instance names its own queues,
    the same at every start; a deployment's hosts share one by setting it."""
    first, second = _default_queue(tmp_path / "a" / "var"), _default_queue(tmp_path / "b" / "var")

    assert first.startswith("governance-")
    assert second.startswith("governance-")
    assert first != second
    assert _default_queue(tmp_path / "a" / "var") == first
