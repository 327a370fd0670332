"""Pages kept live: a server-sent event stream that tells an open page its data changed, so the
page fetches the partial it already polls for at once instead of at its next poll.

Change detection is a version check: the stream reads a small ``version`` of what the page shows
(one cheap query over indexed rows, such as a session's phase and last message number) every
``LIVE_CHECK_SECONDS`` and sends a ``changed`` event when it differs from the one the page has.
Chosen over PostgreSQL LISTEN/NOTIFY because:

* it sees every writer without touching any: the session processor, the scheduler's tick and
  the Celery workers, the admin, review decisions and their handlers, even a bulk ``update()``.
  NOTIFY would have to be added to each of them (and kept there by every future writer);
* LISTEN needs a connection of its own per stream (or a listener thread per process), held
  outside Django's connection handling and lost behind a transaction-pooling proxy; the check
  uses the request thread's ordinary connection, one autocommit query at a time;
* its cost is bounded and small: at most ``LIVE_MAX_STREAMS`` streams per process, each one
  indexed query a second; a person reading a page does not notice a one-second delay.

A stream never holds a web worker for long: it ends after ``LIVE_STREAM_SECONDS`` (below the
server's worker timeout) and tells the browser to reconnect (``retry:``, then ``Last-Event-ID``
carries the version it has); a comment every ``LIVE_HEARTBEAT_SECONDS`` keeps proxies from
closing it and lets the server notice a closed tab. A process holds at most ``LIVE_MAX_STREAMS``
open streams, and none at all unless its server runs requests in threads (``wsgi.multithread``):
a sync worker would be blocked for every other request, and under ASGI this synchronous stream
would be read whole before it is sent. Beyond that the answer is 503 and the page keeps polling,
which it does anyway, more slowly.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Generator, Iterator
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase, StreamingHttpResponse

from governance.kernel.logs import loggable_path

EVENT = "changed"
logger = logging.getLogger(__name__)


def version_of(*values: Any) -> str:
    """A short, stable token for what a page shows (goes into URLs and event ids)."""
    return hashlib.sha256(repr(values).encode()).hexdigest()[:16]


class _Slots:
    """How many streams this process has open, against the cap."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.open = 0

    def take(self) -> bool:
        with self._lock:
            if self.open >= settings.LIVE_MAX_STREAMS:
                return False
            self.open += 1
            return True

    def give_back(self) -> None:
        with self._lock:
            self.open -= 1


slots = _Slots()


class _Stream:
    """The response body: the events, and the slot given back when the server closes it (at the
    end, or when the browser went away), whether or not it was ever read."""

    def __init__(self, version: Callable[[], str], shown: str) -> None:
        self._events = self._generate(version, shown)
        self._open = True

    def __iter__(self) -> Iterator[bytes]:
        return self._events

    def close(self) -> None:
        self._events.close()
        if self._open:
            self._open = False
            slots.give_back()

    @staticmethod
    def _generate(version: Callable[[], str], shown: str) -> Generator[bytes, None, None]:
        yield f"retry: {settings.LIVE_RETRY_MS}\n\n".encode()
        ends = time.monotonic() + settings.LIVE_STREAM_SECONDS
        heartbeat = time.monotonic() + settings.LIVE_HEARTBEAT_SECONDS
        while True:
            current = version()
            if current != shown:
                shown = current
                yield f"id: {current}\nevent: {EVENT}\ndata: {current}\n\n".encode()
            now = time.monotonic()
            if now >= ends:
                return
            if now >= heartbeat:
                heartbeat = now + settings.LIVE_HEARTBEAT_SECONDS
                yield b": heartbeat\n\n"
            time.sleep(min(settings.LIVE_CHECK_SECONDS, max(ends - now, 0)))


def stream(request: HttpRequest, version: Callable[[], str]) -> HttpResponseBase:
    """The event stream for one page. ``version`` reads what the page shows now; the page said
    which version it has in ``?since=`` (a reconnecting browser in ``Last-Event-ID``). Call it
    after the page's own permission checks: the stream shows nothing, but it is their equal."""
    threaded = bool(request.META.get("wsgi.multithread"))
    if not threaded or not slots.take():
        busy = HttpResponse(
            "Live updates are busy: the page refreshes itself on its own.",
            status=503,
            content_type="text/plain; charset=utf-8",
        )
        busy["Retry-After"] = str(max(1, int(settings.LIVE_STREAM_SECONDS)))  # a slot frees by then
        # Expected, not a server error: said once here, at info, instead of Django's error line.
        busy._has_been_logged = True  # type: ignore[attr-defined]
        reason = "all slots taken" if threaded else "not threaded"
        logger.info("Live stream refused for %s: %s", loggable_path(request.path), reason)
        return busy
    shown = request.headers.get("Last-Event-ID") or request.GET.get("since", "")
    response = StreamingHttpResponse(_Stream(version, shown), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # a buffering proxy (nginx) would hold the events back
    return response
