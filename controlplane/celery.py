"""The Celery application: settings under the CELERY_ namespace, tasks discovered per app."""

from __future__ import annotations

import os

from celery import Celery, signals

from governance.kernel import tracing

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")

app = Celery("governance")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
tracing.connect_celery()

# Pools whose tasks run in the worker's own process (no fork, so no worker_process_init).
_POOLS_WITHOUT_FORK = ("solo", "threads", "eventlet", "gevent")


@signals.worker_init.connect
@signals.beat_init.connect
def _prepare(**_: object) -> None:
    """A worker (before it forks its pool) or beat: the embedded database and var/ first."""
    from governance.kernel import runtime

    runtime.prepare()


@signals.celeryd_init.connect
@signals.setup_logging.connect
def _logging(**_: object) -> None:
    """Worker and beat log as the web does (settings.LOGGING: LOG_FORMAT, LOG_LEVEL, each line's
    request, task and trace ids), not in Celery's own format. The worker's is set up at its very
    start too (celeryd_init), with warnings logged: the warnings it gives before its own logging
    is set up (running as root) would otherwise be raw lines in a JSON log."""
    import logging.config

    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)
    logging.captureWarnings(True)


@signals.worker_init.connect
def _trace_worker(sender: object = None, **_: object) -> None:
    """Traces start in the process that runs the tasks: here only for pools that do not fork."""
    pool = getattr(sender, "pool_cls", None)
    name = pool if isinstance(pool, str) else getattr(pool, "__module__", "")
    if any(kind in name for kind in _POOLS_WITHOUT_FORK):
        tracing.setup("governance-worker")


@signals.worker_process_init.connect
def _trace_pool_process(**_: object) -> None:
    tracing.setup("governance-worker")


@signals.worker_process_shutdown.connect
def _flush_traces(**_: object) -> None:
    tracing.shutdown()


@signals.beat_init.connect
def _trace_beat(**_: object) -> None:
    tracing.setup("governance-beat")
