"""Periodic work, item by item: one bad row is that row's problem, not the whole run's.

A beat task that loops over rows (jobs to sweep, escalations past their deadline, session timers...)
handles each one under ``Failures.guard``: a row that raises is logged with its traceback, counted
and named in the task's result (which its TaskRun row keeps), the caller may mark it so that it is
not tried again at every beat, and the run goes on with the next row. The guard opens no
transaction of its own (each item keeps its own, short ones included); inside a caller's
transaction it adds a savepoint, so that the failed item's writes roll back alone and the
transaction goes on. Before this, a single row whose data could not be handled (a job timeout that
overflowed a datetime) ended every run of the job sweeper, and no job of any agent was swept any
more.

A database that stops answering is not one row's problem: OperationalError and InterfaceError
(and Celery's time limit) end the run as they did, and the next beat tries again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.db import InterfaceError, OperationalError, connection, transaction

logger = logging.getLogger(__name__)

ENDS_THE_RUN = (OperationalError, InterfaceError, SoftTimeLimitExceeded)
SHOWN = 20  # items named in a run's result; the count and the log have them all


@dataclass
class Failures:
    """The items one run could not handle. ``where`` names the work in the log (``jobs``)."""

    where: str
    count: int = 0
    items: list[dict[str, str]] = field(default_factory=list)

    @contextmanager
    def guard(self, item: str, *, mark: Callable[[Exception], None] | None = None) -> Iterator[None]:
        """Run the block for ``item`` (``"job <id>"``); if it raises, log, count and skip it, then
        call ``mark`` with the error, in a transaction of its own (a mark that fails too is logged,
        and the run still goes on)."""
        try:
            with _savepoint():
                yield
        except ENDS_THE_RUN:
            raise
        except Exception as exc:  # any error of one item is that item's, by design
            self._failed(item, exc)
            if mark is not None:
                self._mark(item, exc, mark)

    def _failed(self, item: str, exc: Exception) -> None:
        self.count += 1
        error = f"{type(exc).__name__}: {exc}"[:500]
        if len(self.items) < SHOWN:
            self.items.append({"item": item, "error": error})
        logger.error("[%s] %s skipped: %s", self.where, item, error, exc_info=exc)

    def _mark(self, item: str, exc: Exception, mark: Callable[[Exception], None]) -> None:
        try:
            with transaction.atomic():
                mark(exc)
        except ENDS_THE_RUN:
            raise
        except Exception as failure:  # the row stays as it is; the next run reports it again
            logger.error("[%s] %s could not be marked: %s", self.where, item, failure, exc_info=failure)

    def as_dict(self) -> dict[str, Any]:
        """What a task's result says of them: ``errors`` always, the first items when there are some."""
        return {"errors": self.count, **({"error_items": self.items} if self.items else {})}


def _savepoint() -> AbstractContextManager[Any]:
    """A savepoint when a transaction is open (a failed statement would otherwise abort it whole),
    nothing otherwise."""
    return transaction.atomic() if connection.in_atomic_block else nullcontext()
