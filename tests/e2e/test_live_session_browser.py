"""An operator watches a session's page in a real browser: as the agent sends a message and the
operator's colleague stops the session elsewhere, the page shows each new phase and message
within seconds, pushed by its event stream, without being reloaded (its poll, every 30 s, would
be far too late for these waits)."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from governance.kernel.principals import Principal
from sessions import scheduler
from sessions.models import AISession
from tests.governance.reviews.test_inbox import send, start_chat

PASSWORD = "correct horse battery staple"
PUSHED_MS = 8_000


@pytest.fixture(autouse=True)
def _short_streams(settings):
    """Streams that end (and reconnect) within the test, so none outlives it."""
    settings.LIVE_STREAM_SECONDS = 5
    settings.LIVE_HEARTBEAT_SECONDS = 1.0


def log_in(page: Any, username: str, next_url: str) -> None:
    page.goto(f"/accounts/login/?next={next_url}")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"**{next_url}")


@pytest.mark.django_db(transaction=True)
def test_the_session_page_follows_the_session_without_a_reload(page, admin_operator, vlevel_api):
    from playwright.sync_api import expect

    session_id = start_chat(vlevel_api, "Audit help")
    url = reverse("sessions:session-detail", args=[session_id])
    log_in(page, "alice", url)
    state = page.locator("#session-state")
    expect(state).to_contain_text("IDLE")
    loads: list[str] = []
    page.on("framenavigated", lambda frame: loads.append(frame.url))
    page.wait_for_function("() => document.querySelector('[sse-connect]') !== null")

    send(vlevel_api, session_id, {"type": "UserMessageSent", "payload": {"text": "How are my audits doing?"}})

    expect(state).to_contain_text("CALLING_AI", timeout=PUSHED_MS)
    expect(page.locator("#thread")).to_contain_text("How are my audits doing?", timeout=PUSHED_MS)

    scheduler.stop(AISession.objects.get(pk=session_id), actor=Principal(user=admin_operator))

    expect(state).to_contain_text("COMPLETED", timeout=PUSHED_MS)
    expect(state).to_contain_text("CANCELLED")
    expect(state.get_by_role("button", name="Stop session")).to_have_count(0)
    assert loads == []  # every change came in place: the page itself was never loaded again
