"""Two Celery beats started by mistake: exactly one sends, and the other takes over when it dies.

Real beat processes on the test database and the machine's Redis; the periodic heartbeat is due
every second, and the test counts the messages that reach its queue (no worker consumes them).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import redis
from django_celery_beat.models import PeriodicTask

from governance.kernel import beat, env
from tests.support.beat import heartbeat_every_second
from tests.support.processes import BASE_DIR, PYTHON, database_url_of_tests, process_env, wait_for

pytestmark = [
    pytest.mark.process,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not env.redis_answers(), reason="counts messages on a Redis queue; no Redis answers here"),
]


def _beat(child_env: dict[str, str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [PYTHON, "-m", "celery", "-A", "controlplane", "beat", "--loglevel", "INFO", "--max-interval", "1"],
        cwd=BASE_DIR,
        env=child_env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )


def _leading(log: Path) -> bool:
    return "[beat] leading" in log.read_text()


def test_one_of_two_beats_sends_and_the_other_takes_over_when_it_is_killed(tmp_path):
    heartbeat_every_second()
    child_env = process_env(tmp_path / "var", DATABASE_URL=database_url_of_tests(), BEAT_STANDBY_SECONDS="1")
    queue = child_env["CELERY_QUEUE"]  # the heartbeat goes to the default queue
    broker = redis.Redis.from_url(child_env["CELERY_BROKER_URL"])
    logs = [tmp_path / "beat-a.log", tmp_path / "beat-b.log"]
    beats = [_beat(child_env, log) for log in logs]
    try:
        assert wait_for(lambda: any(_leading(log) for log in logs), 60), [log.read_text()[-2000:] for log in logs]
        assert wait_for(lambda: all("standing by" in log.read_text() or _leading(log) for log in logs), 30)
        assert [_leading(log) for log in logs].count(True) == 1
        assert beat.holder() is not None

        # Both beats run for eight seconds: a heartbeat a second, not two.
        start = broker.llen(queue)
        time.sleep(8)
        sent = broker.llen(queue) - start
        assert 5 <= sent <= 10, sent

        leader = next(process for process, log in zip(beats, logs, strict=True) if _leading(log))
        standby_log = next(log for log in logs if not _leading(log))
        os.killpg(leader.pid, signal.SIGKILL)  # a crash: no clean shutdown, no lock released by hand
        leader.wait(timeout=30)
        killed_at = time.monotonic()
        assert wait_for(lambda: _leading(standby_log), 30), standby_log.read_text()[-2000:]
        took_over_in = time.monotonic() - killed_at
        assert took_over_in < 10

        # The new leader carries on from where the old one stopped: one heartbeat a second again.
        start = broker.llen(queue)
        time.sleep(6)
        assert 3 <= broker.llen(queue) - start <= 8
        assert PeriodicTask.objects.get(name="heartbeat").last_run_at is not None
    finally:
        for process in beats:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=30)
        broker.delete(queue)
    assert wait_for(lambda: beat.holder() is None, 30)  # the lock went with its last holder
