"""Handing work to Celery: the one way the apps queue a task.

A task is queued only once the transaction that asked for it has committed: a worker must never
look for a row that is not there yet, nor act on a change that was rolled back. A task is sent
by name, so the sending side never imports the worker's code.

Sending never fails the request that asked for it. A broker outage only delays the work: every
queued task has a beat-driven backstop that finds the work from the database on its own (the
scheduler tick for timers, deadlines and free slots; ``memory.embed_missing`` for embeddings).

Because the workers acknowledge a message only once the task has run (``acks_late``), a task
killed with its worker is delivered again: every task must be idempotent on redelivery.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.db import transaction

logger = logging.getLogger(__name__)


def send(task_name: str, *args: Any, eta: datetime | None = None) -> bool:
    """Queue ``task_name`` now; False (and a warning) when the broker cannot be reached."""
    from celery import current_app as app

    try:
        app.send_task(task_name, args=list(args), eta=eta)
    except Exception as exc:  # the broker is down; the task's backstop catches up
        logger.warning("[dispatch] could not queue %s: %s", task_name, exc.__class__.__name__)
        return False
    return True


def after_commit(task_name: str, *args: Any, eta: datetime | None = None) -> None:
    """Queue ``task_name`` once the current transaction commits (at once outside one); nothing is
    queued if it rolls back, savepoints included."""
    transaction.on_commit(lambda: send(task_name, *args, eta=eta))
