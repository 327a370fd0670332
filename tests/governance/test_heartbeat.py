"""The beat -> broker -> worker path, with a real Celery beat and a real worker process."""

from __future__ import annotations

import subprocess

import pytest

from governance.kernel.models import TaskRun
from tests.support.beat import heartbeat_every_second
from tests.support.processes import BASE_DIR, PYTHON, database_url_of_tests, process_env, wait_for

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]


def _start(args: list[str], child_env: dict, log) -> subprocess.Popen:
    return subprocess.Popen(
        [PYTHON, "-m", "celery", "-A", "controlplane", *args],
        cwd=BASE_DIR,
        env=child_env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )


def _stop(*processes: subprocess.Popen) -> None:
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_the_heartbeat_is_scheduled_by_beat_and_run_by_a_worker(tmp_path, anonymous_api):
    heartbeat_every_second()
    assert anonymous_api.get("/health").json()["heartbeat"]["status"] == "never"

    child_env = process_env(tmp_path / "var", DATABASE_URL=database_url_of_tests())
    log_path = tmp_path / "celery.log"
    with open(log_path, "w") as log:
        worker = _start(["worker", "--loglevel", "INFO", "--concurrency", "1"], child_env, log)
        beat = _start(["beat", "--loglevel", "INFO", "--max-interval", "1"], child_env, log)
        try:
            ran = wait_for(
                lambda: TaskRun.objects.filter(task_name="governance.heartbeat", status="success").first(), 90
            )
        finally:
            _stop(beat, worker)

    assert ran is not None, log_path.read_text()[-4000:]
    assert ran.finished_at >= ran.started_at
    assert ran.worker
    assert ran.result["at"]
    heartbeat = anonymous_api.get("/health").json()["heartbeat"]
    assert heartbeat["status"] == "ok"
    assert heartbeat["age_seconds"] < 120
