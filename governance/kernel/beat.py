"""One acting Celery beat, however many are started: leadership is a PostgreSQL advisory lock.

Two beats started by mistake (two hosts with ``--role all``, a restart that overlaps) would each
send every periodic task: two ticks, two eviction runs. Each beat here asks for a session-level
advisory lock on a connection of its own; the one that holds it schedules, the others stand by
and ask again every ``BEAT_STANDBY_SECONDS``. The database releases the lock when the leader's
connection ends (the process exits, is killed, or its host disappears from the network and the
server notices), so a standby takes over without any coordination service.

A leader writes each entry's last run right after sending it (``CELERY_BEAT_SYNC_EVERY = 1``) and
a new leader reads the schedule afresh from the database, so a takeover neither repeats nor
skips what the previous leader did.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import socket
from typing import Any

import psycopg
from django.conf import settings
from django.db import connections
from django_celery_beat.schedulers import DatabaseScheduler

logger = logging.getLogger(__name__)

# pg_try_advisory_lock takes a signed 64-bit key: this one is ours alone within the database.
LOCK_KEY = int.from_bytes(hashlib.sha256(b"governance.beat.leader").digest()[:8], "big", signed=True)


class Leadership:
    """The advisory lock on a dedicated autocommit connection (never Django's, which the
    scheduler closes and reopens as it likes: closing it would drop the lock)."""

    def __init__(self) -> None:
        self._connection: psycopg.Connection | None = None

    def held(self) -> bool:
        """Whether this process leads now: keeps the lock if its connection is alive, else tries
        to take it. Never raises: a database outage means standing by."""
        try:
            if self._connection is not None:
                self._connection.execute("SELECT 1")
                return True
            connection = psycopg.connect(**_connection_params(), autocommit=True)
            row = connection.execute("SELECT pg_try_advisory_lock(%s)", (LOCK_KEY,)).fetchone()
            if row and row[0]:
                connection.execute("SET application_name = 'governance beat (leader)'")
                self._connection = connection
                return True
            connection.close()
        except psycopg.Error as exc:
            if self._connection is not None:
                logger.warning("[beat] leadership lost: %s", exc.__class__.__name__)
            self.release()
        return False

    def release(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(psycopg.Error):
                self._connection.close()
        self._connection = None


def _connection_params() -> dict[str, Any]:
    params = connections["default"].get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    params.setdefault("application_name", "governance beat")
    return params


def holder() -> str | None:
    """Where the leading beat's lock connection comes from (for health and operators), None when
    no beat leads."""
    unsigned = LOCK_KEY & 0xFFFFFFFFFFFFFFFF
    with connections["default"].cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(host(a.client_addr), 'local socket'), a.pid FROM pg_locks l"
            " JOIN pg_stat_activity a ON a.pid = l.pid"
            " WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1"
            " AND l.classid = %s::bigint::oid AND l.objid = %s::bigint::oid"
            " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            [unsigned >> 32, unsigned & 0xFFFFFFFF],
        )
        row = cursor.fetchone()
    return None if row is None else f"{row[0]} (server pid {row[1]})"


class LeaderScheduler(DatabaseScheduler):
    """django-celery-beat's scheduler, acting only while this beat holds the leadership."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.leadership = Leadership()
        self.leading: bool | None = None  # unknown until the first tick
        super().__init__(*args, **kwargs)

    def tick(self, *args: Any, **kwargs: Any) -> float:
        if not self.leadership.held():
            if self.leading is not False:
                logger.info("[beat] standing by: another beat holds the lock (host %s)", socket.gethostname())
            self.leading = False
            return min(float(settings.BEAT_STANDBY_SECONDS), float(self.max_interval))
        if not self.leading:
            logger.info(
                "[beat] leading: this beat sends the periodic tasks (host %s, pid %s)",
                socket.gethostname(),
                os.getpid(),
            )
            self.leading = True
            # Whatever this process read before it led is stale: read the schedule (and each
            # entry's last run, written by the previous leader) afresh.
            self._initial_read = True
            self._heap = None
        return super().tick(*args, **kwargs)

    def close(self) -> None:
        super().close()
        self.leadership.release()
