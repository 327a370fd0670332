"""The outcomes of admitted calls, written by a thread of the process, not by the request's.

A call admitted in one round trip has its row written, as ``forwarded``, before anything is
forwarded (gateway/forwarding.py ``admit``); what came of it (the outcome, the latency, the
secrets its result held) completes that row. Written in the request's thread, that statement
would delay the agent's next request on the same connection, since a server reads it only once
the previous one is done; so the express lane (gateway/express.py) hands the completions to this
writer, which writes all those waiting in one statement (``gateway_call_complete``, migration
0009) on its own database connection.

What a crash can lose: the completions still queued when the process dies (a few milliseconds'
worth) and, since their commit does not wait for the disk, those of the last fraction of a second
when the database dies. Their rows stay ``forwarded`` ("Forwarded (no outcome recorded)"): who
called which tool with which arguments, when, and that it was forwarded are never lost, and the
rate limit counted the call. A stopping process writes what is queued before it exits.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import queue
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

from django.db import DEFAULT_DB_ALIAS, close_old_connections, connection, connections

logger = logging.getLogger(__name__)

BACKLOG = 10_000  # beyond it a request writes its own completion: the queue never grows unbounded
BATCH = 500  # completions written by one statement at most
STOP_WAIT = 5.0  # seconds a stopping process waits for the queued completions
IDLE = 60.0  # seconds without a completion after which the thread lets its database connection go


@dataclass(frozen=True)
class Completion:
    """The outcome of an admitted call, for its row (``GatewayCall``)."""

    id: int
    outcome: str
    latency_ms: float | None
    error_class: str
    refusal: str
    secrets_found: int
    secret_kinds: list[str]

    def fields(self) -> dict[str, Any]:
        """The row's columns it sets, by name (for the ORM)."""
        return {key: value for key, value in asdict(self).items() if key not in ("id", "outcome")}


def complete(completions: list[Completion]) -> None:
    """Complete the rows in one statement, whose commit does not wait for the disk."""
    rows = json.dumps([asdict(one) for one in completions])
    with connection.cursor() as cursor:
        cursor.execute("SELECT gateway_call_complete(%s::jsonb)", [rows])


class Writer:
    """One thread per process (started again after a fork), writing the queued completions."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Completion | None] = queue.Queue(BACKLOG)
        self._lock = threading.Lock()
        self._pid = 0

    def _started(self) -> None:
        with self._lock:
            if self._pid != os.getpid():  # first use, or a forked child (the parent's thread is not here)
                self._queue = queue.Queue(BACKLOG)
                threading.Thread(target=self._run, name="gateway-outcomes", daemon=True).start()
                self._pid = os.getpid()

    def put(self, completion: Completion) -> None:
        """Complete the row later; at once in the caller's thread when the backlog is full, or when
        the caller is inside a transaction (its row is not visible to another connection yet)."""
        if connection.in_atomic_block:
            _written([completion])
            return
        self._started()
        try:
            self._queue.put_nowait(completion)
        except queue.Full:
            _written([completion])

    def flush(self, timeout: float = STOP_WAIT) -> bool:
        """Wait until every queued completion is written; False if some still are after ``timeout``."""
        deadline = time.monotonic() + timeout
        while self._pid == os.getpid() and self._queue.unfinished_tasks:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        return True

    def stop(self, timeout: float = STOP_WAIT) -> bool:
        """Write what is queued, then let the thread's database connection go: a stopping process,
        the end of a test (a test database is dropped only once nobody is connected)."""
        if self._pid == os.getpid():
            self._queue.put(None)
        return self.flush(timeout)

    def _run(self) -> None:
        # A connection of the thread's own, whatever the thread that started it shares (a test
        # server's request threads share the test's).
        connections[DEFAULT_DB_ALIAS] = connections.create_connection(DEFAULT_DB_ALIAS)
        while True:
            try:
                taken = [self._queue.get(timeout=IDLE)]
            except queue.Empty:
                connection.close()
                continue
            while len(taken) < BATCH:
                try:
                    taken.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                _written([one for one in taken if one is not None])
                if None in taken:
                    connection.close()
            finally:
                for _ in taken:
                    self._queue.task_done()


def _written(completions: list[Completion]) -> None:
    """Complete the rows. A failure cannot reach the agents any more: it is logged, the rows stay
    ``forwarded``, and a broken connection is replaced for the next ones."""
    if not completions:
        return
    try:
        complete(completions)
    except Exception:
        logger.exception("[gateway] the outcomes of %d governed call(s) could not be written", len(completions))
        close_old_connections()


WRITER = Writer()
atexit.register(WRITER.stop)
