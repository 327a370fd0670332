"""LOG_FORMAT=json from the outside: `manage.py serve` runs gunicorn, the Celery workers and beat,
and every line they write is one JSON object; request lines (gunicorn's access log included)
carry the request id, and a task's lines its task id; serve's own banner too is log records."""

from __future__ import annotations

import json
import urllib.request

import pytest
from celery import current_app

from governance.kernel.models import TaskRun
from tests.support.processes import (
    database_url_of_tests,
    free_port,
    process_env,
    sending_to,
    serving_plane,
    wait_for,
)

pytestmark = pytest.mark.process

# The one line Celery's worker prints (not logs) when it is stopped, after its last log line.
CELERY_STOP = "worker: Warm shutdown (MainProcess)"


def _objects(text: str) -> list[dict]:
    lines = [line for line in text.splitlines() if line.strip()]
    return [json.loads(line) for line in lines if line != CELERY_STOP]  # a line not JSON fails here


@pytest.mark.django_db(transaction=True)
def test_every_process_logs_json_lines_with_request_and_task_ids(tmp_path):
    port = free_port()
    child_env = process_env(
        tmp_path / "var",
        DATABASE_URL=database_url_of_tests(),
        PORT=str(port),
        HOST="127.0.0.1",
        LOG_FORMAT="json",
        LOG_LEVEL="DEBUG",  # a task's routine lines too (INFO hides them): each must carry its task id
        DEBUG="1",
        EMBEDDING_BACKEND="hashing",
    )
    log_path = tmp_path / "serve.log"
    with serving_plane(child_env, log_path):
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/v1/health/live", headers={"X-Request-ID": "probe-json-1"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.headers["X-Request-ID"] == "probe-json-1"
        with sending_to(child_env["CELERY_QUEUE"], child_env["CELERY_BROKER_URL"]):
            sent = current_app.send_task("governance.heartbeat")
        assert wait_for(lambda: TaskRun.objects.filter(task_id=sent.id).exists(), timeout=60), log_path.read_text()
        beat_logged = wait_for(lambda: '"governance.kernel.beat"' in log_path.read_text(), timeout=30)
        assert beat_logged, log_path.read_text()

    objects = _objects(log_path.read_text())
    loggers = {line["logger"] for line in objects}
    assert {"governance.serve", "gunicorn.error", "gunicorn.access", "governance.kernel.beat"} <= loggers, loggers
    assert any(name.startswith("celery.worker") for name in loggers), loggers
    access = [
        line for line in objects if line["logger"] == "gunicorn.access" and line.get("path") == "/api/v1/health/live"
    ]
    assert access, objects
    assert access[0]["request_id"] == "probe-json-1"
    assert access[0]["status"] == "200"
    task_lines = [line for line in objects if line.get("task_id") == sent.id]
    assert task_lines, [line for line in objects if "task" in line["logger"]]
