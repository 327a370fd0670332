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
    from controlplane.celery import app

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


def _beat_ran(seconds_ago: float) -> None:
    now = timezone.now()
    TaskRunFactory(
        task_name="governance.heartbeat",
        status=TaskRun.Status.SUCCESS,
        started_at=now - timedelta(seconds=seconds_ago + 1),
        finished_at=now - timedelta(seconds=seconds_ago),
    )


@pytest.fixture
def broker_down():
    """The broker at a closed port, as when Redis is stopped."""
    from controlplane.celery import app

    original = app.conf.broker_url
    app.conf.broker_url = "redis://127.0.0.1:1/0"
    yield
    app.conf.broker_url = original


@pytest.mark.django_db
def test_liveness_answers_without_checking_anything(anonymous_api, broker_down):
    """Broker down, heartbeat never seen: the process is alive all the same."""
    response = anonymous_api.get("/health/live")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_readiness_is_200_when_everything_answers(anonymous_api):
    _beat_ran(30)

    response = anonymous_api.get("/health/ready")

    assert response.status_code == 200
    assert response.json()["heartbeat"]["status"] == "ok"


@pytest.mark.django_db
def test_readiness_degrades_when_the_broker_is_down(anonymous_api, broker_down):
    _beat_ran(30)

    response = anonymous_api.get("/health/ready")

    assert response.status_code == 503
    body = response.json()
    assert body["broker"] == "unavailable"
    assert [error["loc"] for error in body["errors"]] == [["broker"]]
    assert response["Retry-After"]
    # /health itself keeps answering 200 (serve.py and older probes wait on it).
    assert anonymous_api.get("/health").status_code == 200


@pytest.mark.django_db
def test_readiness_degrades_when_the_heartbeat_is_stale_or_never_seen(anonymous_api, settings):
    response = anonymous_api.get("/health/ready")
    assert response.status_code == 503
    assert {"loc": ["heartbeat"], "msg": "never", "type": "dependency"} in response.json()["errors"]

    _beat_ran(60)
    settings.HEARTBEAT_STALE_AFTER = 10
    response = anonymous_api.get("/health/ready")
    assert response.status_code == 503
    assert {"loc": ["heartbeat"], "msg": "stale", "type": "dependency"} in response.json()["errors"]


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/health/live", "/health/ready"])
def test_the_probes_read_only_whoever_calls_them(client, path):
    """Keyless by design: no key, an agent's key or a forged one get the same report, and the
    probe writes nothing (no audit row, no last-used time, no task run)."""
    from tests.support.keys import issue_key
    from tests.support.manifests import load
    from tests.support.refusals import nothing_written

    _beat_ran(5)
    agent_key = issue_key(agent=load("agent.seo.vlevel"))
    with nothing_written():
        answers = [
            client.get(f"/api/v1{path}", **headers)
            for headers in ({}, {"HTTP_AUTHORIZATION": f"Bearer {agent_key}"}, {"HTTP_AUTHORIZATION": "Bearer forged"})
        ]
    assert {response.status_code for response in answers} == {200}
    assert len({response.json()["status"] for response in answers}) == 1
