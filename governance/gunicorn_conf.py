"""gunicorn's configuration for the plane's web server (``--config python:governance.gunicorn_conf``).

Its one hook: a worker that exits (restarted, killed, timed out) has its live metric gauges
dropped, so requests it was answering when it died do not stay "in progress" forever
(governance/kernel/metrics.py). Its counters stay: what it answered was answered.

The hook runs in the master, which reads METRICS_DIR from the settings (the workers read them
when they load the application).
"""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "governance.settings")


def child_exit(server: Any, worker: Any) -> None:
    try:
        from governance.kernel import metrics

        metrics.mark_dead(worker.pid)
    except Exception:  # an exception here would stop gunicorn's master: its workers matter more
        server.log.exception("could not drop the metrics of worker %s", worker.pid)
