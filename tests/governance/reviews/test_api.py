"""POST /api/v1/reviews/{id}/decision: reviewers decide once; every decision is kept."""

from __future__ import annotations

import pytest

from governance.kernel.principals import SYSTEM
from governance.reviews import services as reviews
from governance.reviews.models import ReviewDecision, ReviewItem
from sessions.models import AISession
from tests.support.api import Api
from tests.support.keys import issue_key


@pytest.fixture
def item(db, agent) -> ReviewItem:
    return reviews.open_item(
        actor=SYSTEM, kind="test", title="Run the deploy tool?", payload={"tool": "deploy"}, agent=agent
    )


@pytest.fixture
def reviewer_api(client, reviewer) -> Api:
    return Api(client, issue_key(user=reviewer))


@pytest.mark.django_db
def test_a_reviewer_approves(reviewer_api, item):
    response = reviewer_api.post(f"/reviews/{item.pk}/decision", {"decision": "approve", "comment": "ok for prod"})

    assert response.status_code == 200
    body = response.json()
    assert body["decision"] == "approve"
    assert body["decidedBy"] == "user:rita"
    assert body["status"] == "approved"
    assert body["payloadHash"] == reviews.payload_hash({"tool": "deploy"})
    item.refresh_from_db()
    assert item.status == "approved"


@pytest.mark.django_db
def test_a_second_decision_is_409_naming_the_first(reviewer_api, client, admin_operator, item):
    reviewer_api.post(f"/reviews/{item.pk}/decision", {"decision": "reject"})

    second = Api(client, issue_key(user=admin_operator)).post(f"/reviews/{item.pk}/decision", {"decision": "approve"})

    assert second.status_code == 409
    assert "rita" in second.json()["detail"]
    assert ReviewDecision.objects.get().decision == "reject"


@pytest.mark.django_db
def test_viewers_and_agents_cannot_decide(viewer_api, agent_api, item):
    assert viewer_api.post(f"/reviews/{item.pk}/decision", {"decision": "approve"}).status_code == 403
    assert agent_api.post(f"/reviews/{item.pk}/decision", {"decision": "approve"}).status_code == 403
    assert not ReviewDecision.objects.exists()


@pytest.mark.django_db
def test_bad_decisions_and_unknown_items(reviewer_api, item):
    bad = reviewer_api.post(f"/reviews/{item.pk}/decision", {"decision": "maybe"})
    assert bad.status_code == 422
    assert bad.json()["errors"][0]["loc"] == ["body", "decision"]
    assert reviewer_api.post("/reviews/999999/decision", {"decision": "approve"}).status_code == 404


@pytest.mark.django_db
def test_pending_items_are_listed(reviewer_api, item):
    body = reviewer_api.get("/reviews").json()
    assert body["count"] == 1
    assert body["items"][0]["title"] == "Run the deploy tool?"


# Answering a MultipleChoice question through the API (API.md additions, seed 003 section 12) ----


@pytest.fixture
def question(vlevel_api):
    """A CHAT of agent.seo.vlevel waiting for a reviewer to pick Home or Checkout."""
    from tests.governance.reviews.test_inbox import CHOICE, waiting_for_answer

    return waiting_for_answer(vlevel_api, CHOICE)


def session_of(session_id: str) -> AISession:
    return AISession.objects.get(pk=session_id)


@pytest.mark.django_db
def test_an_agent_or_a_viewer_cannot_answer_and_the_session_keeps_waiting(agent_api, vlevel_api, viewer_api, question):
    session_id, item = question

    for api in (vlevel_api, agent_api, viewer_api):
        refused = api.post(f"/reviews/{item.pk}/decision", {"decision": "answer", "response": "Home"})
        assert refused.status_code == 403, refused.content
        assert "Home" not in refused.content.decode()

    assert not ReviewDecision.objects.exists()
    assert session_of(session_id).phase == "WAITING_COMMUNICATION_RESPONSE"


@pytest.mark.django_db
def test_a_reviewer_answers_and_the_session_gets_the_option_as_from_the_inbox(reviewer_api, question):
    session_id, item = question

    response = reviewer_api.post(f"/reviews/{item.pk}/decision", {"decision": "answer", "response": "Checkout"})

    assert response.status_code == 200, response.content
    assert (response.json()["decision"], response.json()["status"]) == ("answer", "answered")
    assert ReviewDecision.objects.get(item=item).answer == "Checkout"
    session = session_of(session_id)
    assert session.phase == "CALLING_AI"
    last_user = session.messages.filter(sender="USER").order_by("-seq").first()
    assert last_user.text_content == "Checkout"
    assert not session.messages.filter(fallback_kind="COMMUNICATION_CANCELLED", removed_at__isnull=True).exists()


@pytest.mark.django_db
def test_a_response_that_is_not_an_option_is_422_at_the_response(reviewer_api, question):
    session_id, item = question

    for body in (
        {"decision": "answer", "response": "Cart"},
        {"decision": "answer", "response": "home"},
        {"decision": "answer"},
    ):
        refused = reviewer_api.post(f"/reviews/{item.pk}/decision", body)
        assert refused.status_code == 422, (body, refused.content)
        assert refused.json()["errors"][0]["loc"] == ["body", "response"]

    assert not ReviewDecision.objects.exists()
    assert session_of(session_id).phase == "WAITING_COMMUNICATION_RESPONSE"


@pytest.mark.django_db
def test_a_response_with_an_approval_is_refused_rather_than_lost(reviewer_api, item):
    refused = reviewer_api.post(f"/reviews/{item.pk}/decision", {"decision": "approve", "response": "Home"})

    assert refused.status_code == 422
    assert refused.json()["errors"][0]["loc"] == ["body", "response"]
    assert not ReviewDecision.objects.exists()


@pytest.mark.django_db
def test_only_a_multiple_choice_question_is_answered(reviewer_api, vlevel_api, item):
    from tests.governance.reviews.test_inbox import YES_NO, waiting_for_answer

    _, yes_no = waiting_for_answer(vlevel_api, YES_NO, name="May I")

    for target in (item, yes_no):
        refused = reviewer_api.post(f"/reviews/{target.pk}/decision", {"decision": "answer", "response": "Approved"})
        assert refused.status_code == 422, refused.content
        assert refused.json()["errors"][0]["loc"] == ["body", "decision"]
    assert not ReviewDecision.objects.exists()


@pytest.mark.django_db
def test_a_question_answered_already_is_409_and_keeps_the_first_answer(reviewer_api, client, admin_operator, question):
    session_id, item = question
    reviewer_api.post(f"/reviews/{item.pk}/decision", {"decision": "answer", "response": "Home"})

    second = Api(client, issue_key(user=admin_operator)).post(
        f"/reviews/{item.pk}/decision", {"decision": "answer", "response": "Checkout"}
    )

    assert second.status_code == 409
    assert "rita" in second.json()["detail"]
    assert ReviewDecision.objects.get(item=item).answer == "Home"
    assert session_of(session_id).messages.filter(sender="USER", text_content="Checkout").count() == 0
    assert reviewer_api.post("/reviews/999999/decision", {"decision": "answer", "response": "Home"}).status_code == 404
