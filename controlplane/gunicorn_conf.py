"""gunicorn's configuration for the plane's web server (``--config python:controlplane.gunicorn_conf``).

Its logs go through the plane's formatters (settings.LOGGING): with ``LOG_FORMAT=json`` the
master's and workers' error log and the access log are one JSON object per line like every other
process's, and each access line carries the request's id (the ``X-Request-ID`` the answer sends),
its method, path, status and duration as fields. Access lines keep no query string, and subject
routes show ``{subject}`` in place of the key (``access_log_format``, ``AccessFields``).

Its one hook: a worker that exits (restarted, killed, timed out) has its live metric gauges
dropped, so requests it was answering when it died do not stay "in progress" forever
(governance/kernel/metrics.py). Its counters stay: what it answered was answered.

Idle client connections stay open ``WEB_KEEPALIVE_SECONDS`` (75 s) instead of gunicorn's 2 s:
pooled clients (an agent's HTTP library, a proxy's upstream pool) reuse a connection after a
pause, and one sent just as the server closes it fails. The server must outlast the pools in
front of it: load balancers and proxies keep idle connections 60 s by default (docs/deploy.md).

The hook runs in the master, which reads METRICS_DIR from the settings (the workers read them
when they load the application).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from governance.kernel import env

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")

keepalive = env.integer("WEB_KEEPALIVE_SECONDS", 75)

# gunicorn's access line fields, by its atom names (gunicorn.glogging.Logger.atoms).
_ACCESS_FIELDS = {"request_id": "{x-request-id}o", "method": "m", "path": "U", "status": "s", "duration_us": "D"}

# gunicorn's default line with the request line (%(r)s, which carries the query string) spelled
# out as method, path and protocol: logs keep no search text (governance/kernel/logs.py).
access_log_format = '%(h)s %(l)s %(u)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s "%(f)s" "%(a)s"'


def _private_atoms(atoms: dict[str, Any]) -> None:
    """What an access line may show: paths and the Referer without query strings, and without a
    subject's key on subject routes, whichever atoms a format (ours or one set on the command line)
    uses."""
    from governance.kernel.logs import loggable_path, loggable_url

    if "U" in atoms:
        atoms["U"] = loggable_path(atoms["U"])
    if atoms.get("m") and "r" in atoms:
        atoms["r"] = f"{atoms['m']} {atoms['U']} {atoms.get('H', '')}".strip()
    if "q" in atoms:
        atoms["q"] = ""
    for name in ("f", "{referer}i"):
        if name in atoms:
            atoms[name] = loggable_url(atoms[name])


class AccessFields(logging.Filter):
    """Turns gunicorn's access atoms into fields of the record, once they are private
    (``_private_atoms``). The request's own log context is gone by the time gunicorn logs the access
    line: its id comes from the answer's header."""

    def filter(self, record: logging.LogRecord) -> bool:
        atoms = record.args
        if isinstance(atoms, dict):
            _private_atoms(atoms)
            for field, atom in _ACCESS_FIELDS.items():
                value = atoms[atom]
                if value != "-":
                    setattr(record, field, value)
        return True


def _logconfig() -> dict[str, Any]:
    """gunicorn.error to stderr and gunicorn.access to stdout, in the format of settings.LOGGING."""
    from django.conf import settings

    logging_settings: dict[str, Any] = settings.LOGGING
    console = logging_settings["handlers"]["console"]
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": logging_settings["formatters"],
        "filters": {**logging_settings["filters"], "access": {"()": AccessFields}},
        "handlers": {
            "console": {**console, "stream": "ext://sys.stderr"},
            "access": {**console, "filters": ["access"], "stream": "ext://sys.stdout"},
        },
        "loggers": {
            "gunicorn.error": {"handlers": ["console"], "level": settings.LOG_LEVEL, "propagate": False},
            "gunicorn.access": {"handlers": ["access"], "level": "INFO", "propagate": False},
        },
        "root": {"handlers": ["console"], "level": settings.LOG_LEVEL},
    }


logconfig_dict = _logconfig()


def child_exit(server: Any, worker: Any) -> None:
    try:
        from governance.kernel import metrics

        metrics.mark_dead(worker.pid)
    except Exception:  # an exception here would stop gunicorn's master: its workers matter more
        server.log.exception("could not drop the metrics of worker %s", worker.pid)
