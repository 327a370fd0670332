"""The Celery application: settings under the CELERY_ namespace, tasks discovered per app."""

from __future__ import annotations

import os

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "governance.settings")

app = Celery("governance")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.worker_init.connect
@signals.beat_init.connect
def _prepare(**_: object) -> None:
    """A worker (before it forks its pool) or beat: the embedded database and var/ first."""
    from governance.kernel import runtime

    runtime.prepare()
