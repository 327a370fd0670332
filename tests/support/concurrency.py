"""Real concurrent callers for the tests that race writers: threads released together by a
barrier, each on its own database connection, with what each returned or raised."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from django.db import connection

T = TypeVar("T")


def at_once(call: Callable[[], T], callers: int, *, timeout: float = 120) -> tuple[list[T], list[BaseException]]:
    """Run ``call`` in ``callers`` threads started together; (results, errors) in finishing order.
    Each thread closes its connection, so a transactional test's database is left free."""
    barrier = threading.Barrier(callers)
    results: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            barrier.wait()
            results.append(call())
        except BaseException as exc:  # a deadlock or a serialization failure lands here, for the test to assert
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(callers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    return results, errors
