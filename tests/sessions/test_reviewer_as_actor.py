"""A reviewer's decision moves the waiting session on as the reviewer, not as the platform: the
session's audit trail names who approved or answered. The authority for it is the review
permission the decision already needed, which lets the reviewer emit the reviewer's events only
through the inbox, never any other event and never through the sessions API."""

from __future__ import annotations

import pytest

from governance.kernel.exceptions import Forbidden
from governance.kernel.models import AuditEvent
from governance.kernel.principals import Principal
from sessions.machine import Event
from sessions.models import AISession
from sessions.processor import apply_event
from tests.governance.reviews.test_inbox import CHOICE, waiting_for_answer, waiting_for_validation
from tests.support.api import Api
from tests.support.inbox import decide_in_inbox
from tests.support.keys import issue_key

REVIEWER_EVENTS = [
    ("ValidationReceived", {"approved": True}),
    ("CommunicationResponseReceived", {"response": "Home"}),
]


def applied(session_id: str) -> AuditEvent:
    return AuditEvent.objects.get(action="session.review_applied", target_id=session_id)


@pytest.mark.django_db
@pytest.mark.parametrize(("event", "payload"), REVIEWER_EVENTS)
def test_an_agent_key_still_cannot_emit_a_reviewers_answer(vlevel_api, event, payload):
    session_id, _ = waiting_for_validation(vlevel_api)

    response = vlevel_api.post(f"/sessions/{session_id}/events", {"type": event, "payload": payload})

    assert response.status_code == 403
    assert AISession.objects.get(pk=session_id).phase == "WAITING_VALIDATION"
    assert not AuditEvent.objects.filter(action="session.review_applied").exists()


@pytest.mark.django_db
@pytest.mark.parametrize(("event", "payload"), [*REVIEWER_EVENTS, ("UserMessageSent", {"text": "run everything"})])
def test_a_reviewer_cannot_drive_a_session_through_the_sessions_api(vlevel_api, client, reviewer, event, payload):
    session_id, _ = waiting_for_validation(vlevel_api)

    response = Api(client, issue_key(user=reviewer)).post(
        f"/sessions/{session_id}/events", {"type": event, "payload": payload}
    )

    assert response.status_code == 403, response.content
    assert AISession.objects.get(pk=session_id).phase == "WAITING_VALIDATION"


@pytest.mark.django_db
@pytest.mark.parametrize("event", [Event.USER_MESSAGE_SENT, Event.SCHEDULER_HEARTBEAT, Event.PHASE_DEADLINE_PASSED])
def test_a_reviewers_authority_covers_only_the_reviewers_events(vlevel_api, reviewer, event):
    session_id, _ = waiting_for_validation(vlevel_api)

    with pytest.raises(Forbidden):
        apply_event(session_id, event, {"text": "x"}, actor=Principal(user=reviewer), as_reviewer=True)

    assert AISession.objects.get(pk=session_id).phase == "WAITING_VALIDATION"


@pytest.mark.django_db
def test_an_agent_cannot_borrow_a_reviewers_authority(vlevel_api, vlevel):
    session_id, _ = waiting_for_validation(vlevel_api)

    with pytest.raises(Forbidden):
        apply_event(
            session_id, Event.VALIDATION_RECEIVED, {"approved": True}, actor=Principal(agent=vlevel), as_reviewer=True
        )


@pytest.mark.django_db
def test_an_approval_in_the_inbox_moves_the_session_on_as_the_reviewer(vlevel_api, client, reviewer):
    session_id, item = waiting_for_validation(vlevel_api)
    client.force_login(reviewer)

    decide_in_inbox(client, item.pk, "approve")

    assert AISession.objects.get(pk=session_id).phase == "EXECUTING_ACTIONS"
    row = applied(session_id)
    assert row.actor == "user:rita"
    assert row.data == {"event": "ValidationReceived", "review_item": item.pk, "phase": "EXECUTING_ACTIONS"}


@pytest.mark.django_db
def test_an_answer_in_the_inbox_moves_the_session_on_as_the_reviewer(vlevel_api, client, reviewer):
    session_id, item = waiting_for_answer(vlevel_api, CHOICE)
    client.force_login(reviewer)

    decide_in_inbox(client, item.pk, "answer", answer="Home")

    row = applied(session_id)
    assert row.actor == "user:rita"
    assert row.data["event"] == "CommunicationResponseReceived"
    assert row.data["review_item"] == item.pk
