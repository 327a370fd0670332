"""Tools whose manifest entry requires approval: 202 and a review item until a reviewer approves
that very call; the approval is good for one call with the same arguments."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from agents.models import ToolCall, ToolGrant
from governance.kernel.models import AuditEvent
from governance.reviews.models import ReviewItem
from tests.support.inbox import decide_in_inbox

SNAPSHOT = "/agents/agent.seo.vlevel/tools/mcp__chrome-devtools__take_snapshot/calls"
HOME = {"arguments": {"url": "https://shop.example.com/"}}
CHECKOUT = {"arguments": {"url": "https://shop.example.com/checkout"}}


def approve(client, reviewer, item_id: int, decision: str = "approve"):
    client.force_login(reviewer)
    response = decide_in_inbox(client, item_id, decision)
    client.logout()
    return response


@pytest.mark.django_db
def test_the_first_call_waits_for_a_reviewer(vlevel_api):
    response = vlevel_api.post(SNAPSHOT, HOME)

    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "pending"
    item = ReviewItem.objects.get(pk=body["reviewItemId"])
    assert item.kind == "tool_approval"
    assert item.payload["arguments"] == HOME["arguments"]
    assert not ToolCall.objects.exists()


@pytest.mark.django_db
def test_asking_again_while_pending_answers_the_same_item(vlevel_api):
    first = vlevel_api.post(SNAPSHOT, HOME).json()
    second = vlevel_api.post(SNAPSHOT, HOME).json()

    assert first == second
    assert ReviewItem.objects.count() == 1


@pytest.mark.django_db
def test_an_approval_is_good_for_one_call_with_the_same_arguments(vlevel_api, client, reviewer):
    item_id = vlevel_api.post(SNAPSHOT, HOME).json()["reviewItemId"]
    approve(client, reviewer, item_id)

    other_arguments = vlevel_api.post(SNAPSHOT, CHECKOUT)
    called = vlevel_api.post(SNAPSHOT, HOME)
    again = vlevel_api.post(SNAPSHOT, HOME)

    assert other_arguments.status_code == 202  # a different call needs its own approval
    assert called.status_code == 201
    grant = ToolGrant.objects.get(review_item_id=item_id)
    assert called.json()["grantId"] == grant.pk
    assert grant.status == "used"
    assert grant.tool_call_id == called.json()["id"]
    assert again.status_code == 202  # used once: the next identical call asks again
    assert again.json()["reviewItemId"] != item_id
    assert ToolCall.objects.count() == 1
    assert AuditEvent.objects.filter(action="tool.grant_used", target_id=str(grant.pk)).exists()
    assert AuditEvent.objects.filter(action="review.approve", actor="user:rita").exists()


@pytest.mark.django_db
def test_a_rejected_call_is_refused_when_asked_again(vlevel_api, client, reviewer):
    item_id = vlevel_api.post(SNAPSHOT, HOME).json()["reviewItemId"]
    approve(client, reviewer, item_id, decision="reject")

    refused = vlevel_api.post(SNAPSHOT, HOME)

    assert refused.status_code == 403
    assert refused.json()["reviewItemId"] == item_id
    assert not ToolCall.objects.exists()
    assert ReviewItem.objects.count() == 1


@pytest.mark.django_db
def test_an_approval_unused_past_its_validity_expires(vlevel_api, client, reviewer, settings):
    item_id = vlevel_api.post(SNAPSHOT, HOME).json()["reviewItemId"]
    approve(client, reviewer, item_id)
    ToolGrant.objects.filter(review_item_id=item_id).update(
        decided_at=timezone.now() - timedelta(hours=settings.REVIEW_EXPIRY_HOURS, minutes=1)
    )

    response = vlevel_api.post(SNAPSHOT, HOME)

    assert response.status_code == 202
    assert ToolGrant.objects.get(review_item_id=item_id).status == "expired"
    assert not ToolCall.objects.exists()


@pytest.mark.django_db
def test_the_agent_cannot_approve_its_own_call(vlevel_api):
    item_id = vlevel_api.post(SNAPSHOT, HOME).json()["reviewItemId"]

    response = vlevel_api.post(f"/reviews/{item_id}/decision", {"decision": "approve"})

    assert response.status_code == 403
    assert ReviewItem.objects.get(pk=item_id).status == "pending"
    assert vlevel_api.post(SNAPSHOT, HOME).status_code == 202


@pytest.mark.django_db
def test_the_inbox_shows_the_tool_and_its_arguments(vlevel_api, client, reviewer):
    vlevel_api.post(SNAPSHOT, HOME)
    client.force_login(reviewer)

    html = client.get(reverse("reviews:inbox")).content.decode()

    assert "Tool call" in html
    assert "mcp__chrome-devtools__take_snapshot" in html
    assert "https://shop.example.com/" in html
