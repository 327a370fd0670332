"""Record every Celery task execution as a TaskRun row (fed by Celery's own signals).

This is bookkeeping, not business logic: tasks stay unaware of it, and a failure to record
never fails the task itself.
"""

from __future__ import annotations

import logging
import socket
from datetime import datetime
from typing import Any

from celery import signals
from django.db import DatabaseError
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from governance.kernel import retention

logger = logging.getLogger(__name__)

_HOST = socket.gethostname()
WORKER_LOST = "worker lost: the task was delivered again"


def _json_safe(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return str(value)


def _started(task_id: str, task: Any, **_: Any) -> None:
    from governance.kernel.models import TaskRun

    now = timezone.now()
    try:
        # A run of this task id still open is one whose worker died (acks_late delivered the task
        # again): it ended in failure, and this run must not close it as its own success.
        TaskRun.objects.filter(task_id=task_id, task_name=task.name, finished_at__isnull=True).update(
            status=TaskRun.Status.FAILURE, finished_at=now, error=WORKER_LOST
        )
        TaskRun.objects.create(task_name=task.name, task_id=task_id, started_at=now, worker=_HOST)
    except DatabaseError:
        logger.exception("[taskruns] could not record start: task=%s id=%s", task.name, task_id)


def _finished(task_id: str, task: Any, retval: Any = None, state: str = "", **_: Any) -> None:
    from governance.kernel.models import TaskRun

    status = {
        "SUCCESS": TaskRun.Status.SUCCESS,
        "RETRY": TaskRun.Status.RETRY,
    }.get(state, TaskRun.Status.FAILURE)
    update: dict[str, Any] = {"status": status, "finished_at": timezone.now()}
    if status == TaskRun.Status.SUCCESS:
        update["result"] = _json_safe(retval)
    else:
        update["error"] = str(retval)[:4000]
    try:
        TaskRun.objects.filter(task_id=task_id, task_name=task.name, finished_at__isnull=True).update(**update)
    except DatabaseError:
        logger.exception("[taskruns] could not record end: task=%s id=%s", task.name, task_id)


def connect() -> None:
    signals.task_prerun.connect(_started, weak=False, dispatch_uid="governance.kernel.taskruns.started")
    signals.task_postrun.connect(_finished, weak=False, dispatch_uid="governance.kernel.taskruns.finished")


def _old_runs(cutoff: datetime) -> QuerySet[Any]:
    from governance.kernel.models import TaskRun

    newer = TaskRun.objects.filter(task_name=OuterRef("task_name"), started_at__gt=OuterRef("started_at"))
    return TaskRun.objects.filter(started_at__lt=cutoff).filter(Exists(newer))


# Pruned: a task run is bookkeeping. The latest run of each task is kept whatever its age, since
# pages and health show when a task last ran.
TASK_RUN_RETENTION = retention.Policy(name="task runs", action=retention.PRUNE, candidates=_old_runs)
