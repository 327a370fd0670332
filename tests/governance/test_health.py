"""GET /api/v1/health really queries PostgreSQL, pgvector and the broker."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from governance.kernel import health
from governance.kernel.models import TaskRun
from tests.factories.governance import TaskRunFactory


@pytest.mark.django_db
def test_health_is_open_and_reports_every_dependency(anonymous_api):
    response = anonymous_api.get("/health")

    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["database"] == "ok"
    assert body["vector"] == "ok"
    assert body["broker"] in {"ok", "unavailable"}
    assert body["heartbeat"]["status"] == "never"


@pytest.mark.django_db
def test_the_vector_check_runs_a_real_nearest_neighbour_query():
    assert health.check_vector() == "ok"
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass('health_vector_probe')")
        assert cursor.fetchone() == (None,), "the probe table must not outlive the check"


@pytest.mark.django_db
def test_the_vector_check_fails_without_pgvector(django_db_blocker):
    """Dropping the extension inside a rolled-back savepoint makes the check say so."""
    from django.db import transaction

    with transaction.atomic():
        sid = transaction.savepoint()
        with connection.cursor() as cursor:
            cursor.execute("DROP EXTENSION vector CASCADE")
        assert health._guarded(health.check_vector) == "error"
        transaction.savepoint_rollback(sid)
    assert health.check_vector() == "ok"


@pytest.mark.django_db
def test_the_broker_check_reports_an_unreachable_broker(settings):
    from governance.celery import app

    original = app.conf.broker_url
    app.conf.broker_url = "redis://127.0.0.1:1/0"
    try:
        assert health.check_broker() == "unavailable"
    finally:
        app.conf.broker_url = original


@pytest.mark.django_db
def test_health_shows_when_the_heartbeat_last_ran(anonymous_api, settings):
    now = timezone.now()
    TaskRunFactory(
        task_name="governance.heartbeat",
        status=TaskRun.Status.SUCCESS,
        started_at=now - timedelta(seconds=30),
        finished_at=now - timedelta(seconds=29),
    )

    beat = anonymous_api.get("/health").json()["heartbeat"]
    assert beat["status"] == "ok"
    assert 28 <= beat["age_seconds"] <= 60

    settings.HEARTBEAT_STALE_AFTER = 10
    assert anonymous_api.get("/health").json()["heartbeat"]["status"] == "stale"


@pytest.mark.django_db
def test_a_failed_heartbeat_does_not_count(anonymous_api):
    TaskRunFactory(task_name="governance.heartbeat", status=TaskRun.Status.FAILURE, started_at=timezone.now())
    assert anonymous_api.get("/health").json()["heartbeat"]["status"] == "never"
