"""A session's page stays live: its event stream sends `changed` as soon as the session's state
changes (through the services, as an agent or an operator changes it), the page then refreshes
its state card, timeline and, when it grew, its thread. A stream is for those who may read the
page, ends on its own, and a process keeps only a few open (503 beyond: the page keeps polling)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.sessions.models import Session
from django.test import Client
from django.urls import reverse

from governance.kernel import live
from governance.kernel.principals import Principal
from sessions import scheduler
from sessions.models import AISession
from tests.governance.reviews.test_inbox import HTMX, as_user, send, start_chat
from tests.support.api import Api
from tests.support.keys import issue_key

THREADED: dict[str, Any] = {"wsgi.multithread": True}  # what gunicorn's gthread worker and the live server say


@pytest.fixture(autouse=True)
def _quick_streams(settings):
    settings.LIVE_CHECK_SECONDS = 0.01
    settings.LIVE_HEARTBEAT_SECONDS = 0.05
    settings.LIVE_STREAM_SECONDS = 0.3


def events_url(session_id: str, since: str = "") -> str:
    return reverse("sessions:session-events", args=[session_id]) + (f"?since={since}" if since else "")


def page_version(client: Client, session_id: str) -> str:
    """The version the page was rendered with, as it puts it in its stream's URL."""
    html = client.get(reverse("sessions:session-detail", args=[session_id])).content.decode()
    marker = events_url(session_id, "")
    start = html.index(marker + "?since=") + len(marker + "?since=")
    return html[start : html.index('"', start)]


def chunks(response) -> Iterator[str]:
    return (chunk.decode() for chunk in response.streaming_content)


def finish(response) -> list[str]:
    """Read the stream to its end (a fraction of a second here): the server then closes it, as
    gunicorn does, which gives its slot back."""
    return list(chunks(response))


@pytest.mark.django_db
def test_the_stream_tells_the_page_when_the_session_is_stopped(client, admin_operator, vlevel_api):
    session_id = start_chat(vlevel_api, "Audit help")
    as_user(client, admin_operator)
    since = page_version(client, session_id)

    response = client.get(events_url(session_id, since), **THREADED)
    assert response.status_code == 200
    assert response["Content-Type"] == "text/event-stream"
    assert response["Cache-Control"] == "no-cache"
    stream = chunks(response)
    assert next(stream) == "retry: 2000\n\n"

    scheduler.stop(AISession.objects.get(pk=session_id), actor=Principal(user=admin_operator))

    event = next(stream)
    assert event.startswith("id: ")
    assert "\nevent: changed\n" in event
    new_version = event.split("\n")[0].removeprefix("id: ")
    assert new_version != since
    assert new_version == page_version(client, session_id)
    finish(response)


@pytest.mark.django_db
def test_a_new_message_from_the_agent_is_a_change(client, viewer, vlevel_api):
    session_id = start_chat(vlevel_api, "Audit help")
    as_user(client, viewer)
    response = client.get(events_url(session_id, page_version(client, session_id)), **THREADED)
    stream = chunks(response)
    next(stream)

    send(vlevel_api, session_id, {"type": "UserMessageSent", "payload": {"text": "How are my audits?"}})

    assert "event: changed" in next(stream)
    finish(response)


@pytest.mark.django_db
def test_nothing_changing_sends_heartbeats_only_and_the_stream_ends_on_its_own(client, viewer, vlevel_api):
    session_id = start_chat(vlevel_api, "Audit help")
    as_user(client, viewer)

    response = client.get(events_url(session_id, page_version(client, session_id)), **THREADED)
    received = finish(response)  # ends by itself after LIVE_STREAM_SECONDS

    assert received[0] == "retry: 2000\n\n"
    assert ": heartbeat\n\n" in received
    assert not any("event:" in chunk for chunk in received)


@pytest.mark.django_db
def test_a_page_older_than_the_session_is_told_at_once_and_a_reconnect_uses_its_last_event(client, viewer, vlevel_api):
    session_id = start_chat(vlevel_api, "Audit help")
    as_user(client, viewer)
    stale = page_version(client, session_id)
    send(vlevel_api, session_id, {"type": "UserMessageSent", "payload": {"text": "How are my audits?"}})

    first = client.get(events_url(session_id, stale), **THREADED)
    received = finish(first)
    assert sum("event: changed" in chunk for chunk in received) == 1
    last_id = next(chunk for chunk in received if chunk.startswith("id: ")).split("\n")[0].removeprefix("id: ")

    again = client.get(events_url(session_id, stale), HTTP_LAST_EVENT_ID=last_id, **THREADED)
    assert not any("event:" in chunk for chunk in finish(again))


@pytest.mark.django_db
def test_the_refresh_brings_the_new_state_and_the_thread_only_when_it_grew(client, viewer, vlevel_api):
    session_id = start_chat(vlevel_api, "Audit help")
    as_user(client, viewer)
    live_url = reverse("sessions:session-live", args=[session_id])
    unchanged = client.get(live_url, {"after": 0}, **HTMX).content.decode()
    assert 'id="session-state"' in unchanged
    assert 'id="thread"' not in unchanged

    send(vlevel_api, session_id, {"type": "UserMessageSent", "payload": {"text": "How are my audits?"}})
    grown = client.get(live_url, {"after": 0}, **HTMX).content.decode()

    assert (
        '<section class="card section thread" id="thread" aria-labelledby="thread-heading" hx-swap-oob="true">' in grown
    )
    assert "How are my audits?" in grown
    assert '<input type="hidden" id="thread-after" name="after" value="1">' in grown
    assert "CALLING_AI" in grown


@pytest.mark.django_db
def test_the_page_connects_to_its_stream_and_keeps_polling(client, viewer, vlevel_api):
    session_id = start_chat(vlevel_api, "Audit help")
    html = as_user(client, viewer).get(reverse("sessions:session-detail", args=[session_id])).content.decode()

    assert f'hx-ext="sse" sse-connect="{events_url(session_id)}?since=' in html
    assert f'hx-get="{reverse("sessions:session-live", args=[session_id])}" hx-trigger="sse:changed, every 30s"' in html
    assert "django_htmx/ext/hx-sse-2.min.js" in html


@pytest.mark.django_db
def test_anonymous_callers_and_agent_keys_are_sent_to_the_login_page(client, vlevel, vlevel_api):
    session_id = start_chat(vlevel_api, "Audit help")

    anonymous = Client().get(events_url(session_id), **THREADED)
    with_key = Client().get(events_url(session_id), HTTP_AUTHORIZATION=f"Bearer {issue_key(agent=vlevel)}", **THREADED)

    for response in (anonymous, with_key):
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))
    assert Api(client, issue_key(agent=vlevel)).get(f"/sessions/{session_id}").status_code == 200  # the key works


@pytest.mark.django_db
def test_an_account_without_the_session_permission_is_refused(client, outsider, vlevel_api):
    session_id = start_chat(vlevel_api, "Audit help")
    as_user(client, outsider)

    assert client.get(events_url(session_id), **THREADED).status_code == 403
    assert client.get(reverse("sessions:session-live", args=[session_id]), **HTMX).status_code == 403


@pytest.mark.django_db
def test_an_unknown_session_has_no_stream(client, viewer):
    as_user(client, viewer)

    assert client.get(events_url("00000000-0000-0000-0000-000000000000"), **THREADED).status_code == 404


@pytest.mark.django_db
def test_past_the_cap_a_stream_is_refused_with_503_until_one_closes(client, viewer, vlevel_api, settings):
    session_id = start_chat(vlevel_api, "Audit help")
    as_user(client, viewer)
    settings.LIVE_MAX_STREAMS = live.slots.open + 1

    first = client.get(events_url(session_id), **THREADED)
    refused = client.get(events_url(session_id), **THREADED)
    finish(first)
    after = client.get(events_url(session_id), **THREADED)

    assert first.status_code == 200
    assert refused.status_code == 503
    assert refused["Retry-After"] == "1"  # LIVE_STREAM_SECONDS, at least a second
    assert after.status_code == 200
    finish(after)
    assert live.slots.open == settings.LIVE_MAX_STREAMS - 1


@pytest.mark.django_db
def test_a_server_that_runs_one_request_at_a_time_gets_no_stream(client, viewer, vlevel_api):
    session_id = start_chat(vlevel_api, "Audit help")
    as_user(client, viewer)
    open_before = live.slots.open

    response = client.get(events_url(session_id), **{"wsgi.multithread": False})

    assert response.status_code == 503
    assert live.slots.open == open_before


@pytest.mark.django_db
def test_the_live_refresh_and_the_streams_do_not_keep_an_idle_browser_session_alive(
    client, viewer, vlevel_api, settings
):
    settings.SESSION_COOKIE_AGE = 600
    settings.SESSION_IDLE_RENEW_SECONDS = 0
    session_id = start_chat(vlevel_api, "Audit help")
    as_user(client, viewer)
    stored = Session.objects.get(pk=client.session.session_key)
    time.sleep(0.05)

    finish(client.get(events_url(session_id), **THREADED))
    assert client.get(reverse("reviews:inbox-pending"), **HTMX).status_code == 200
    assert client.get(reverse("sessions:session-live", args=[session_id]), **HTMX).status_code == 200
    assert Session.objects.get(pk=stored.pk).expire_date == stored.expire_date

    assert client.get(reverse("sessions:session-detail", args=[session_id])).status_code == 200
    assert Session.objects.get(pk=stored.pk).expire_date > stored.expire_date
