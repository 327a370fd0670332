"""A reviewer in a real browser: logs in through the form, approves one session's actions and
rejects another's by clicking, each row updating in place, and the sessions move on.

An agent has one active session at a time, and a new CHAT suspends the one before it (which
then ignores decisions). So the two sessions ask one after the other: the first is approved,
then the second CHAT asks and reaches the open inbox through its polling, without a reload.
"""

from __future__ import annotations

from typing import Any

import pytest

from governance.reviews.models import ReviewDecision
from sessions.models import AISession
from tests.governance.reviews.test_inbox import waiting_for_validation

PASSWORD = "correct horse battery staple"
POLL_WAIT_MS = 25_000  # the event stream brings a new row at once; the 30 s poll would be too late


def log_in(page: Any, username: str) -> None:
    page.goto("/accounts/login/?next=/inbox/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/inbox/")


def row_of(page: Any, item_id: int) -> Any:
    return page.locator(f'.review-item[data-item-id="{item_id}"]')


@pytest.mark.django_db(transaction=True)
def test_a_reviewer_approves_one_session_and_rejects_another_in_the_browser(page, reviewer, vlevel_api):
    from playwright.sync_api import expect

    approved_id, first = waiting_for_validation(vlevel_api, "Snapshot the home page")

    log_in(page, "rita")
    row = row_of(page, first.pk)
    expect(row).to_contain_text("Run mcp__chrome-devtools__take_snapshot")
    row.get_by_role("button", name="Details").click()
    expect(row.get_by_role("link", name="Snapshot the home page")).to_be_visible()
    row.get_by_label("Comment").fill("read-only snapshot, fine")
    row.get_by_role("button", name="Approve", exact=True).click()

    expect(row.locator(".outcome")).to_contain_text("Approved by rita at ")
    expect(row.locator("button.decision")).to_have_count(0)
    assert AISession.objects.get(pk=approved_id).phase == "EXECUTING_ACTIONS"

    rejected_id, second = waiting_for_validation(vlevel_api, "Snapshot the checkout")
    row = row_of(page, second.pk)
    expect(row).to_be_visible(timeout=POLL_WAIT_MS)
    row.get_by_role("button", name="Reject").click()

    expect(row.locator(".outcome")).to_contain_text("Rejected by rita at ")
    expect(page.locator("#recent-decisions")).to_contain_text("read-only snapshot, fine")

    approved, rejected = AISession.objects.get(pk=approved_id), AISession.objects.get(pk=rejected_id)
    assert approved.phase == "EXECUTING_ACTIONS"  # kept while the second CHAT holds the slot
    assert rejected.phase == "IDLE"
    assert rejected.is_active
    decisions = {d.item_id: d for d in ReviewDecision.objects.select_related("user")}
    assert (decisions[first.pk].decision, decisions[first.pk].user.username) == ("approve", "rita")
    assert decisions[first.pk].comment == "read-only snapshot, fine"
    assert (decisions[second.pk].decision, decisions[second.pk].user.username) == ("reject", "rita")
