"""An agent cannot approve its own work: the reviewer's answers (ValidationReceived,
CommunicationResponseReceived) and the platform's own events never come from an agent key."""

from __future__ import annotations

import pytest

from governance.reviews.models import ReviewItem
from sessions.machine import AGENT_EVENTS, Event
from sessions.models import AISession
from tests.governance.reviews.test_inbox import CHOICE, waiting_for_answer, waiting_for_validation
from tests.support.inbox import decide_in_inbox
from tests.support.refusals import last_audit_id, nothing_written, refusals_since

NOT_THE_AGENTS = sorted(event.value for event in Event if event not in AGENT_EVENTS)


@pytest.mark.django_db
@pytest.mark.parametrize("payload", [{"approved": True}, {"approved": False}])
def test_the_agent_cannot_answer_its_own_validation(vlevel_api, payload):
    session_id, item = waiting_for_validation(vlevel_api)
    since = last_audit_id()

    with nothing_written():
        response = vlevel_api.post(f"/sessions/{session_id}/events", {"type": "ValidationReceived", "payload": payload})

    assert response.status_code == 403
    body = response.json()
    assert body["event"] == "ValidationReceived"
    assert "ValidationReceived" in body["detail"]
    assert AISession.objects.get(pk=session_id).phase == "WAITING_VALIDATION"
    assert ReviewItem.objects.get(pk=item.pk).status == "pending"
    (refusal,) = refusals_since(since)
    assert refusal.actor == "agent:agent.seo.vlevel"
    assert refusal.data["event"] == "ValidationReceived"


@pytest.mark.django_db
def test_the_agent_cannot_answer_its_own_question(vlevel_api):
    session_id, item = waiting_for_answer(vlevel_api, CHOICE)

    with nothing_written():
        response = vlevel_api.post(
            f"/sessions/{session_id}/events", {"type": "CommunicationResponseReceived", "payload": {"response": "Home"}}
        )

    assert response.status_code == 403
    assert response.json()["event"] == "CommunicationResponseReceived"
    assert AISession.objects.get(pk=session_id).phase == "WAITING_COMMUNICATION_RESPONSE"
    assert ReviewItem.objects.get(pk=item.pk).status == "pending"


@pytest.mark.django_db
@pytest.mark.parametrize("event", NOT_THE_AGENTS)
def test_no_platform_or_reviewer_event_is_accepted_from_an_agent_key(vlevel_api, event):
    session_id = vlevel_api.post("/sessions", {"type": "CHAT", "name": "hostile"}).json()["sessionId"]
    since = last_audit_id()

    with nothing_written():
        response = vlevel_api.post(f"/sessions/{session_id}/events", {"type": event, "payload": {"endReason": "ERROR"}})

    assert response.status_code == 403
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["event"] == event
    assert len(refusals_since(since)) == 1


@pytest.mark.django_db
def test_only_a_reviewer_decision_moves_the_session_on(vlevel_api, client, reviewer):
    session_id, item = waiting_for_validation(vlevel_api)
    vlevel_api.post(f"/sessions/{session_id}/events", {"type": "ValidationReceived", "payload": {"approved": True}})
    client.force_login(reviewer)

    decide_in_inbox(client, item.pk, "approve")

    assert ReviewItem.objects.get(pk=item.pk).status == "approved"
    assert AISession.objects.get(pk=session_id).phase == "EXECUTING_ACTIONS"
