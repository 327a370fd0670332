"""The health indicator in the top bar and the health page it links to (issue 17.3): real checks
of PostgreSQL, pgvector, the broker and the heartbeat, and the embedding backlog per memory kind."""

from __future__ import annotations

import re
from datetime import timedelta
from html import unescape

import pytest
from django.core.cache import cache
from django.utils import timezone

from governance.kernel.models import TaskRun
from tests.factories.governance import TaskRunFactory
from tests.factories.memory import LearningFactory


@pytest.fixture(autouse=True)
def fresh_indicator():
    """The indicator is cached for a few seconds: each test starts without a reading."""
    cache.clear()


def beat_ran(seconds_ago: float) -> None:
    now = timezone.now()
    TaskRunFactory(
        task_name="governance.heartbeat",
        status=TaskRun.Status.SUCCESS,
        started_at=now - timedelta(seconds=seconds_ago + 1),
        finished_at=now - timedelta(seconds=seconds_ago),
    )


def indicator(client) -> str:
    """The level the top bar shows once its indicator has loaded (pages ask for it on load)."""
    page = unescape(client.get("/agents/").content.decode())
    assert 'hx-get="/health/indicator/" hx-trigger="load"' in page
    response = client.get("/health/indicator/")
    assert response.status_code == 200
    found = re.search(r'<a class="health-indicator health-(\w+)" href="/health/"', response.content.decode())
    assert found, "no health indicator"
    return found.group(1)


@pytest.mark.django_db
def test_the_top_bar_is_green_when_everything_answers_and_amber_without_a_heartbeat(client, viewer):
    client.force_login(viewer)
    assert indicator(client) == "degraded"  # the heartbeat never ran

    beat_ran(30)
    assert indicator(client) == "degraded"  # still the cached reading
    cache.clear()
    assert indicator(client) == "ok"


@pytest.mark.django_db
def test_the_top_bar_turns_amber_when_the_broker_is_down(client, viewer):
    from controlplane.celery import app

    beat_ran(30)
    client.force_login(viewer)
    original = app.conf.broker_url
    app.conf.broker_url = "redis://127.0.0.1:1/0"
    try:
        assert indicator(client) == "degraded"
    finally:
        app.conf.broker_url = original


@pytest.mark.django_db
def test_an_indicator_that_cannot_be_read_says_unknown_and_the_page_still_works(client, viewer, settings):
    """The cache at a closed port, as when its Redis is stopped: the pages still answer."""
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:1/0"}
    }
    client.force_login(viewer)

    assert indicator(client) == "unknown"


@pytest.mark.django_db
def test_the_health_page_shows_each_dependency_and_the_embedding_backlog(client, viewer):
    beat_ran(42)
    LearningFactory.create_batch(2)
    client.force_login(viewer)

    response = client.get("/health/")

    assert response.status_code == 200
    html = re.sub(r"\s+", " ", unescape(response.content.decode()))
    assert '<dt>Database</dt><dd class="check-ok">ok</dd>' in html
    assert '<dt>Vector search (pgvector)</dt><dd class="check-ok">ok</dd>' in html
    assert '<dt>Broker</dt><dd class="check-ok">ok</dd>' in html
    assert re.search(r'<dd class="check-ok">ok: last ran 4\d\.\d s ago</dd>', html)
    assert "Health unknown" not in html
    assert '<tr><td>learning</td><td class="num">2</td></tr>' in html
    assert "Healthy" in html


@pytest.mark.django_db
def test_visitors_are_sent_to_log_in(client):
    response = client.get("/health/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
