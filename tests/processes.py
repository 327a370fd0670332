"""Helpers for tests that start real processes (Celery, make run) against the test database."""

from __future__ import annotations

import os
import socket
import sys
import time
import uuid
from collections.abc import Callable
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
