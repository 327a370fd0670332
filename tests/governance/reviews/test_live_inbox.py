"""The inbox stays live: its event stream sends `changed` when a request comes in or is decided
(by a reviewer elsewhere, or expired), so the pending list asks what changed at once; for those
who may read the inbox only."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from governance.kernel.principals import Principal
from governance.reviews import services as reviews
from tests.governance.reviews.test_inbox import as_user, waiting_for_validation
from tests.support.keys import issue_key

THREADED: dict[str, Any] = {"wsgi.multithread": True}


@pytest.fixture(autouse=True)
def _quick_streams(settings):
    settings.LIVE_CHECK_SECONDS = 0.01
    settings.LIVE_HEARTBEAT_SECONDS = 0.05
    settings.LIVE_STREAM_SECONDS = 0.3


def inbox_version(client: Client) -> str:
    html = client.get(reverse("reviews:inbox")).content.decode()
    marker = reverse("reviews:inbox-events") + "?since="
    start = html.index(marker) + len(marker)
    return html[start : html.index('"', start)]


def open_stream(client: Client, since: str):
    response: Any = client.get(reverse("reviews:inbox-events"), {"since": since}, **THREADED)
    assert response.status_code == 200
    stream = (chunk.decode() for chunk in response.streaming_content)
    assert next(stream).startswith("retry: ")
    return stream


@pytest.mark.django_db
def test_a_new_request_from_an_agent_is_pushed_to_the_inbox(client, reviewer, vlevel_api):
    as_user(client, reviewer)
    stream = open_stream(client, inbox_version(client))

    waiting_for_validation(vlevel_api)

    assert "event: changed" in next(stream)
    rest = list(stream)  # nothing more changes: heartbeats until the stream ends
    assert not any("event:" in chunk for chunk in rest)


@pytest.mark.django_db
def test_a_decision_made_elsewhere_is_pushed_to_the_inbox(client, reviewer, admin_operator, vlevel_api):
    _, item = waiting_for_validation(vlevel_api)
    as_user(client, reviewer)
    stream = open_stream(client, inbox_version(client))

    reviews.decide(item.pk, actor=Principal(user=admin_operator), decision="approve")

    assert "event: changed" in next(stream)
    list(stream)


@pytest.mark.django_db
def test_the_inbox_connects_to_its_stream(client, viewer):
    html = as_user(client, viewer).get(reverse("reviews:inbox")).content.decode()

    assert f'hx-ext="sse" sse-connect="{reverse("reviews:inbox-events")}?since=' in html


@pytest.mark.django_db
def test_the_inbox_stream_is_for_inbox_readers_only(client, outsider, vlevel):
    anonymous = Client().get(reverse("reviews:inbox-events"), **THREADED)
    with_key = Client().get(
        reverse("reviews:inbox-events"), HTTP_AUTHORIZATION=f"Bearer {issue_key(agent=vlevel)}", **THREADED
    )
    refused = as_user(client, outsider).get(reverse("reviews:inbox-events"), **THREADED)

    assert (anonymous.status_code, with_key.status_code, refused.status_code) == (302, 302, 403)
    assert anonymous["Location"].startswith(reverse("login"))
