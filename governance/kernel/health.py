"""Health checks behind GET /api/v1/health and /health/ready: each really exercises its dependency.

Liveness (/health/live) checks nothing: the process answers. Readiness asks more than
/api/v1/health, which fails only on the database: a plane whose broker is down queues nothing,
and one whose beat has not run the heartbeat recently (or ever) runs no tick, no deadline, no
sweep. A monitor on readiness sees both.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

logger = logging.getLogger(__name__)


def check_database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        return "ok" if cursor.fetchone() == (1,) else "error"


def check_vector() -> str:
    """A real nearest-neighbour query through pgvector on a throw-away temporary table."""
    with transaction.atomic(), connection.cursor() as cursor:
        # A failure rolls the creation back with the transaction; success drops it explicitly.
        cursor.execute("CREATE TEMPORARY TABLE health_vector_probe (v vector(3))")
        cursor.execute("INSERT INTO health_vector_probe (v) VALUES ('[1,0,0]'), ('[0,1,0]'), ('[0,0,1]')")
        cursor.execute("SELECT v::text FROM health_vector_probe ORDER BY v <=> '[0.1,0.9,0]' LIMIT 1")
        nearest = cursor.fetchone()
        cursor.execute("DROP TABLE health_vector_probe")
        return "ok" if nearest == ("[0,1,0]",) else "error"


def check_broker() -> str:
    from celery import current_app as app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
        return "ok"
    except Exception as exc:  # any transport error means the same thing to an operator
        logger.warning("[health] broker unavailable: %s", exc.__class__.__name__)
        return "unavailable"


def heartbeat() -> dict[str, Any]:
    """When the periodic heartbeat last ran on a worker."""
    from governance.kernel.models import TaskRun

    last = (
        TaskRun.objects.filter(task_name="governance.heartbeat", status=TaskRun.Status.SUCCESS)
        .order_by("-started_at")
        .values_list("finished_at", flat=True)
        .first()
    )
    if last is None:
        return {"status": "never", "last_run": None, "age_seconds": None}
    age = (timezone.now() - last).total_seconds()
    status = "ok" if age <= settings.HEARTBEAT_STALE_AFTER else "stale"
    return {"status": status, "last_run": last.isoformat(), "age_seconds": round(age, 1)}


def _guarded(check: Any) -> str:
    try:
        return check()
    except Exception as exc:
        logger.error("[health] %s failed: %s", check.__name__, exc)
        return "error"


def report() -> dict[str, Any]:
    database = _guarded(check_database)
    vector = _guarded(check_vector) if database == "ok" else "error"
    result: dict[str, Any] = {
        "status": "ok" if database == vector == "ok" else "error",
        "database": database,
        "vector": vector,
        "broker": check_broker(),
    }
    result["heartbeat"] = heartbeat() if database == "ok" else {"status": "unknown"}
    return result


def not_ready(report: dict[str, Any]) -> list[str]:
    """The components that keep the plane from being ready, in report order (empty when ready).
    A heartbeat never seen counts: a fresh start is ready once beat and a worker have run it."""
    failing = [name for name in ("database", "vector", "broker") if report[name] != "ok"]
    if report["heartbeat"]["status"] != "ok":
        failing.append("heartbeat")
    return failing
