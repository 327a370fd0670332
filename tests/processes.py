"""Helpers for tests that start real processes (Celery, make run) against the test database."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from django.conf import settings
from django.db import connection

from governance import env

PYTHON = sys.executable
BASE_DIR = Path(settings.BASE_DIR)


def database_url_of_tests() -> str:
    """A URL for the database this test run uses (the test_ one, not the development one)."""
    db = connection.settings_dict
    auth = quote(db["USER"]) + (":" + quote(db["PASSWORD"]) if db["PASSWORD"] else "")
    host = db["HOST"]
    if host.startswith("/"):
        return f"postgresql://{auth}@/{quote(db['NAME'])}?host={host}&port={db['PORT'] or 5432}"
    return f"postgresql://{auth}@{host}:{db['PORT'] or 5432}/{quote(db['NAME'])}"


def process_env(var_dir: Path, **extra: str) -> dict[str, str]:
    """Environment for a child process: its own var/ dir and queue, so nothing is shared with
    a `make run` on the same machine; Redis when it answers, else the filesystem broker."""
    child = dict(os.environ)
    child.pop("DATABASE_URL", None)
    child.update(
        DJANGO_SETTINGS_MODULE="governance.settings",
        VAR_DIR=str(var_dir),
        CELERY_QUEUE=f"test-{uuid.uuid4().hex[:8]}",
        CELERY_BROKER_URL="redis://127.0.0.1:6379/0" if env.redis_answers() else "filesystem://",
        PYTHONUNBUFFERED="1",
    )
    child.update(extra)
    return child


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(condition: Callable[[], object], timeout: float, interval: float = 0.5) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(interval)
    return None


@contextmanager
def celery_worker(tmp_path: Path, *, wait_ready: bool = False, **extra_env: str) -> Iterator[Path]:
    """A real Celery worker on the test database, with this process sending to its queue; yields
    the worker's log file. On exit the worker stops and this process's broker pools start afresh:
    a pool closed here would otherwise refuse every later send of the test run."""
    from kombu import pools as kombu_pools

    from governance.celery import app

    child_env = process_env(tmp_path / "var", DATABASE_URL=database_url_of_tests(), **extra_env)
    saved = app.conf.task_default_queue, app.conf.broker_url, dict(app.conf.broker_transport_options or {})
    app.conf.task_default_queue = child_env["CELERY_QUEUE"]
    app.conf.broker_url = child_env["CELERY_BROKER_URL"]
    if child_env["CELERY_BROKER_URL"].startswith("filesystem"):
        folder = str(tmp_path / "var" / "celery" / "queue")
        app.conf.broker_transport_options = {"data_folder_in": folder, "data_folder_out": folder}
    log_path = tmp_path / "worker.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [PYTHON, "-m", "celery", "-A", "governance", "worker", "--loglevel", "INFO", "--concurrency", "2"],
            cwd=BASE_DIR, env=child_env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            if wait_ready:
                assert wait_for(lambda: "ready" in log_path.read_text(), timeout=60)
            yield log_path
        finally:
            process.terminate()
            process.wait(timeout=30)
            app.conf.task_default_queue, app.conf.broker_url, app.conf.broker_transport_options = saved
            app.pool.force_close_all()
            app._pool = None
            app.amqp._producer_pool = None
            kombu_pools.reset()
