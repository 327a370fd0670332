"""Approvals do not outlive their deadline: every pending review item is expired on time by a beat
task, a decision after the deadline is refused (409) wherever it is given, and what an expired
approval would have allowed stays refused.

Finding 11: a `tool_approval` item three days past its `expires_at` was approved in the inbox, and
the tool call then went through: no sweep expired that kind, and `decide` never read the deadline."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from agents.models import Escalation, ToolCall, ToolGrant
from agents.tasks import escalation_timeouts
from controlplane.celery import app
from governance.kernel.models import TaskRun
from governance.kernel.principals import SYSTEM
from governance.reviews import services as reviews
from governance.reviews.models import ReviewDecision, ReviewItem
from governance.reviews.tasks import expire_due
from tests.agents.test_job_lifecycle import result
from tests.support.refusals import nothing_written

SNAPSHOT = "/agents/agent.seo.vlevel/tools/mcp__chrome-devtools__take_snapshot/calls"
HTMX = {"HTTP_HX_REQUEST": "true"}


def overdue(item_id: int, by: timedelta = timedelta(days=3)) -> None:
    """The item's deadline passed ``by`` ago, and no sweep ran since."""
    ReviewItem.objects.filter(pk=item_id).update(expires_at=timezone.now() - by)


def reviewer_browser() -> Client:
    """rita, the world's reviewer, signed in."""
    browser = Client()
    browser.force_login(get_user_model().objects.get(username="rita"))
    return browser


def status(item_id: int) -> str:
    return ReviewItem.objects.get(pk=item_id).status


@pytest.mark.django_db
def test_a_tool_approval_past_its_deadline_cannot_be_approved_and_the_call_never_goes_through(world):
    overdue(world.review_item_id)

    with nothing_written():
        late = world.reviewer.post(f"/reviews/{world.review_item_id}/decision", {"decision": "approve"})
    call = world.owner.post(SNAPSHOT, {"arguments": {"url": "x"}})

    assert late.status_code == 409, late.content
    assert "expired" in late.json()["detail"]
    assert call.status_code == 202, call.content  # still asking, never called
    assert not ToolCall.objects.exists()
    assert not ToolGrant.objects.filter(status__in=["approved", "used"]).exists()


@pytest.mark.django_db
def test_an_expired_approval_is_never_used_and_the_agent_must_ask_again(world):
    overdue(world.review_item_id)

    expire_due.apply()
    call = world.owner.post(SNAPSHOT, {"arguments": {"url": "x"}})

    assert ToolGrant.objects.get(review_item_id=world.review_item_id).status == "expired"
    assert call.status_code == 202, call.content
    assert call.json()["reviewItemId"] != world.review_item_id  # a new request, for a reviewer to see
    assert not ToolCall.objects.exists()


@pytest.mark.django_db
def test_a_late_decision_in_the_browser_is_refused_and_says_so(world):
    overdue(world.review_item_id)
    browser = reviewer_browser()
    url = reverse("reviews:inbox-decide", args=[world.review_item_id])
    shown = ReviewItem.objects.get(pk=world.review_item_id).payload
    form = {"decision": "approve", "shown": reviews.payload_hash(shown)}

    plain = browser.post(url, form)
    swapped = browser.post(url, form, **HTMX)

    assert plain.status_code == 409
    assert swapped.status_code == 200  # htmx swaps only 2xx: the row says why
    assert "expired" in swapped.content.decode()
    assert 'value="approve"' not in swapped.content.decode()
    assert status(world.review_item_id) == "pending"
    assert not ReviewDecision.objects.exists()


@pytest.mark.django_db
def test_a_bulk_approval_skips_an_expired_promotion(world):
    promotion = reviews.open_item(
        actor=SYSTEM,
        kind="learning_promotion",
        title="Promote a learning",
        payload={"text": "x"},
        expires_at=timezone.now() - timedelta(days=3),
    )

    form = {"items": [f"{promotion.pk}:{promotion.content_hash}"], "decision": "approve"}
    response = reviewer_browser().post(reverse("reviews:inbox-bulk-selected"), form, follow=True)

    assert "Skipped 1 item" in response.content.decode()
    assert status(promotion.pk) == "pending"


@pytest.mark.django_db
def test_a_bulk_api_decision_reports_an_expired_item_as_a_conflict(world):
    fresh = reviews.open_item(actor=SYSTEM, kind="escalation", title="Fresh", payload={})
    overdue(world.review_item_id)

    response = world.reviewer.post(
        "/reviews/decisions", {"ids": [world.review_item_id, fresh.pk, 999999], "decision": "approve"}
    )

    assert response.status_code == 200, response.content
    assert response.json()["results"] == [
        {"id": world.review_item_id, "status": "conflict"},
        {"id": fresh.pk, "status": "decided"},
        {"id": 999999, "status": "not_found"},
    ]
    assert status(world.review_item_id) == "pending"


@pytest.mark.django_db
def test_every_kind_of_item_expires_on_time(world):
    approval = world.owner.post("/approvals", {"action": "publish the report", "arguments": {"page": 1}})
    other = reviews.open_item(actor=SYSTEM, kind="something_new", title="Anything", payload={})
    not_yet = reviews.open_item(
        actor=SYSTEM, kind="something_new", title="Later", payload={}, expires_at=timezone.now() + timedelta(hours=1)
    )
    due = [world.review_item_id, approval.json()["reviewItemId"], other.pk]
    for item_id in due:
        overdue(item_id, by=timedelta(seconds=1))

    expire_due.apply()

    assert [status(item_id) for item_id in due] == ["expired"] * 3
    assert {decision.decided_by for decision in ReviewDecision.objects.all()} == {"system"}
    assert status(not_yet.pk) == "pending"
    run = TaskRun.objects.filter(task_name="reviews.expire_due").latest("started_at")
    assert (run.status, run.result["expired"], run.result["errors"]) == ("success", 3, 0)


@pytest.mark.django_db
def test_an_escalation_is_left_to_its_own_sweep_which_escalates_it_again_first(world):
    # agent.seo.architect, its target, is not registered here: the escalation goes to the inbox.
    world.owner.post(f"/jobs/{world.job_id}/result", result(confidence=0.2))
    escalation = Escalation.objects.get()
    overdue(escalation.review_item_id, by=timedelta(seconds=1))
    Escalation.objects.filter(pk=escalation.pk).update(deadline=timezone.now() - timedelta(seconds=1))

    expire_due.apply()
    escalation_timeouts.apply()

    escalation.refresh_from_db()
    assert (escalation.status, status(escalation.review_item_id)) == ("reescalated", "pending")


@pytest.mark.django_db
def test_one_item_that_cannot_be_expired_is_logged_and_skipped(world, caplog):
    # A tool approval whose grant is gone: its app cannot react to the expiry.
    orphan = reviews.open_item(
        actor=SYSTEM, kind="tool_approval", title="Orphan", payload={}, expires_at=timezone.now() - timedelta(days=1)
    )
    overdue(world.review_item_id)

    with caplog.at_level(logging.ERROR):
        expire_due.apply()

    assert status(world.review_item_id) == "expired"
    assert status(orphan.pk) == "pending"
    assert f"review item {orphan.pk}" in caplog.text
    run = TaskRun.objects.filter(task_name="reviews.expire_due").latest("started_at")
    assert (run.status, run.result["expired"], run.result["errors"]) == ("success", 1, 1)


@pytest.mark.django_db
def test_the_sweep_is_a_beat_entry_seeded_by_a_migration():
    entry = PeriodicTask.objects.get(name="review expiry")

    assert (entry.task, entry.enabled, entry.interval.every, entry.interval.period) == (
        "reviews.expire_due",
        True,
        60,
        "seconds",
    )
    assert "reviews.expire_due" in app.tasks


@pytest.mark.django_db
def test_the_agent_polling_its_approval_reads_expired(world, client):
    asked = world.owner.post("/approvals", {"action": "publish the report", "reason": "monthly"})
    assert asked.status_code == 202, asked.content
    approval_id = asked.json()["approvalId"]
    overdue(asked.json()["reviewItemId"])

    polled = world.owner.get(f"/approvals/{approval_id}")
    stranger = world.other.get(f"/approvals/{approval_id}")

    assert polled.status_code == 200, polled.content
    assert polled.json()["status"] == "expired"
    assert stranger.status_code == 404
