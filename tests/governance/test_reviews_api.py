"""POST /api/v1/reviews/{id}/decision: reviewers decide once; every decision is kept."""

from __future__ import annotations

import pytest

from governance.kernel.principals import SYSTEM
from governance.reviews import services as reviews
from governance.reviews.models import ReviewDecision, ReviewItem
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
