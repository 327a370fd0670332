"""The outcomes of governed calls, written by a thread of the process, not by the request's.

A governed call's row is written, as ``forwarded``, before anything is forwarded (gateway/
forwarding.py ``admit``); what came of the call (its outcome, latency, the secrets its result
held) is one more statement. Written in the request's thread it delays the agent's next request on
the same connection, since a server reads that request only once the previous one is done; so the
express lane (gateway/express.py) hands it to this writer, which runs the writes one after the
other on its own database connection.

What a crash can lose: the writes still queued when the process dies (a few milliseconds' worth)
and, since their commit does not wait for the disk, those of the last fraction of a second when
the database dies. Their rows stay ``forwarded`` ("Forwarded (no outcome recorded)"): who called
which tool with which arguments, when, and that it was forwarded are never lost, and the rate
limit counted the call. A stopping process writes what is queued before it exits.
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import threading
import time
from collections.abc import Callable

from django.db import DEFAULT_DB_ALIAS, close_old_connections, connection, connections

logger = logging.getLogger(__name__)

Write = Callable[[], object]
BACKLOG = 10_000  # beyond it the request writes its own outcome: the queue never grows unbounded
STOP_WAIT = 5.0  # seconds a stopping process waits for the queued writes
IDLE = 60.0  # seconds without a write after which the thread lets its database connection go


class Writer:
    """One thread per process (started again after a fork), writing the queued outcomes in order."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Write] = queue.Queue(BACKLOG)
        self._lock = threading.Lock()
        self._pid = 0

    def _started(self) -> None:
        with self._lock:
            if self._pid != os.getpid():  # first use, or a forked child (the parent's thread is not here)
                self._queue = queue.Queue(BACKLOG)
                threading.Thread(target=self._run, name="gateway-outcomes", daemon=True).start()
                self._pid = os.getpid()

    def put(self, write: Write) -> None:
        """Write later; at once in the caller's thread when the backlog is full, or when the caller
        is inside a transaction (its rows are not visible to another connection before it commits)."""
        if connection.in_atomic_block:
            _written(write)
            return
        self._started()
        try:
            self._queue.put_nowait(write)
        except queue.Full:
            _written(write)

    def flush(self, timeout: float = STOP_WAIT) -> bool:
        """Wait until every queued write is done; False if some still are after ``timeout``."""
        deadline = time.monotonic() + timeout
        while self._pid == os.getpid() and self._queue.unfinished_tasks:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        return True

    def stop(self, timeout: float = STOP_WAIT) -> bool:
        """Write what is queued, then close the thread's database connection: a stopping process,
        the end of a test run (a test database is dropped only once nobody is connected)."""
        if self._pid == os.getpid():
            self._queue.put(lambda: connection.close())  # the thread's own connection, looked up there
        return self.flush(timeout)

    def _run(self) -> None:
        # A connection of the thread's own, whatever the thread that started it shares (a test
        # server's request threads share the test's).
        connections[DEFAULT_DB_ALIAS] = connections.create_connection(DEFAULT_DB_ALIAS)
        while True:
            try:
                write = self._queue.get(timeout=IDLE)
            except queue.Empty:
                connection.close()
                continue
            try:
                _written(write)
            finally:
                self._queue.task_done()


def _written(write: Write) -> None:
    """One write. Its failure cannot reach the agent any more: it is logged, and the call's row
    stays ``forwarded``; a broken connection is replaced for the next one."""
    try:
        write()
    except Exception:
        logger.exception("[gateway] the outcome of a governed call could not be written")
        close_old_connections()


WRITER = Writer()
atexit.register(WRITER.stop)
