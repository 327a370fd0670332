"""What a process of the plane needs before it touches the database or the broker.

Settings only describe; the entry points prepare, once per process: ``manage.py`` (every command,
``serve`` included), the WSGI and ASGI applications, Celery's worker and beat (on init), the test
run (tests/conftest.py) and the benchmarks. Preparing creates the var/ directories, writes the
local secret key on first start, and starts the embedded PostgreSQL (with pgvector) when no
DATABASE_URL is set, pointing DATABASES at it. Every step is idempotent, and several processes
may prepare at once (the server start is under an inter-process lock).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from governance.kernel import embedded_db


def prepare() -> None:
    from django.conf import settings

    settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
    settings.STATIC_ROOT.mkdir(exist_ok=True)
    settings.METRICS_DIR.mkdir(parents=True, exist_ok=True)
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        for folder in ("queue", "processed"):
            (settings.CELERY_DIR / folder).mkdir(parents=True, exist_ok=True)
    if settings.SECRET_KEY_GENERATED:
        settings.SECRET_KEY = _local_secret_key(settings.SECRET_KEY_FILE_LOCAL, settings.SECRET_KEY)
    if not settings.DATABASE_URL:
        start_embedded()


def start_embedded() -> None:
    """Start the embedded PostgreSQL unless it runs, and point this process's connections at it:
    at every process's start, and again when `serve` finds it dead."""
    from django.conf import settings

    server = embedded_db.ensure_running(
        settings.EMBEDDED_PGDATA,
        shared_buffers=settings.EMBEDDED_DB_SHARED_BUFFERS or embedded_db.default_shared_buffers(),
    )
    embedded_db.ensure_database(server, settings.EMBEDDED_DB_NAME)
    # In place: Django's connection handler holds this very dict.
    settings.DATABASES["default"].update(HOST=str(server.socket_dir), PORT=str(server.port))


def release() -> bool:
    """Stop the embedded PostgreSQL if this process started it (a one-shot command on an install
    nothing else was running); a server another process started is left to it. True when stopped."""
    from django.conf import settings

    if settings.DATABASE_URL or not embedded_db.started_here(settings.EMBEDDED_PGDATA):
        return False
    from django.db import connections

    connections.close_all()
    return embedded_db.stop(settings.EMBEDDED_PGDATA)


def _local_secret_key(path: Path, candidate: str) -> str:
    """The key kept under var/ (``candidate`` on first start, readable by the owner only), so
    every process of a single-machine install signs with the same key. Written aside and linked
    into place: a process starting at the same moment reads a whole key or none."""
    if not path.exists():
        draft = path.with_name(f".{path.name}.{os.getpid()}")
        draft.write_text(candidate, encoding="utf-8")
        draft.chmod(0o600)
        with contextlib.suppress(FileExistsError):
            os.link(draft, path)
        draft.unlink()
    return path.read_text(encoding="utf-8").strip()
