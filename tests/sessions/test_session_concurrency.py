"""Concurrent events on one session, from real clients against the real web stack: the session
row lock applies them one after the other, so exactly one wins each phase."""

from __future__ import annotations

import pytest

from governance.kernel.principals import SYSTEM
from governance.kernel.services import issue_api_key
from sessions.models import AISession, SessionMessage
from tests.agents.test_job_concurrency import _all_at_once, _post

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]


def test_ten_simultaneous_user_messages_on_one_idle_chat_apply_once(served, vlevel):
    _, key = issue_api_key(actor=SYSTEM, name="concurrency", agent=vlevel)
    status, _, chat = _post(f"{served}/api/v1/sessions", key, {"type": "CHAT", "name": "race"})
    assert status == 201
    url = f"{served}/api/v1/sessions/{chat['sessionId']}/events"

    results = _all_at_once(10, lambda: _post(url, key, {"type": "UserMessageSent", "payload": {"text": "hello"}}))

    statuses = sorted(status for status, _, _ in results)
    assert statuses == [200] + [409] * 9
    refused = [body for status, _, body in results if status == 409]
    assert all(body["phase"] == "CALLING_AI" and body["event"] == "UserMessageSent" for body in refused)
    assert SessionMessage.objects.filter(sender="USER").count() == 1
    assert list(SessionMessage.objects.values_list("seq", flat=True)) == [1]
    assert AISession.objects.get().phase == "CALLING_AI"


def test_two_simultaneous_chats_leave_one_active_session(served, vlevel):
    _, key = issue_api_key(actor=SYSTEM, name="concurrency", agent=vlevel)

    results = _all_at_once(6, lambda: _post(f"{served}/api/v1/sessions", key, {"type": "CHAT", "name": "c"}))

    assert all(status == 201 for status, _, _ in results)
    assert AISession.objects.filter(is_active=True).count() == 1
    assert AISession.objects.filter(end_reason="SUSPENDED").count() == 5
