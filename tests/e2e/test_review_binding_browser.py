"""Finding 9 in a real browser: a reviewer sees an action's whole parameters before approving, a
short query at once and a long one by opening it, the tail included, and the approval binds to
what the row showed."""

from __future__ import annotations

import pytest

from governance.reviews import services as reviews
from governance.reviews.models import ReviewDecision
from tests.adversarial.test_review_binding import LONG, QUERY, TAIL, asks_to_run
from tests.e2e.test_inbox_browser import log_in, row_of


@pytest.mark.django_db(transaction=True)
def test_the_tail_of_a_query_is_visible_before_approving(page, reviewer, vlevel_api):
    from playwright.sync_api import expect

    item = asks_to_run(vlevel_api, QUERY)

    log_in(page, "rita")
    row = row_of(page, item.pk)
    # Its line cannot show the whole query: approving from it opens the item first, decides nothing.
    row.get_by_role("button", name=f"Approve #{item.pk}").click()
    expect(row.get_by_text(TAIL)).to_be_visible()
    assert not ReviewDecision.objects.filter(item=item).exists()
    row.get_by_role("button", name=f"Approve #{item.pk}").click()

    expect(row.locator(".outcome")).to_contain_text("Approved by rita at ")
    assert ReviewDecision.objects.get(item=item).payload_hash == reviews.payload_hash(item.payload)


@pytest.mark.django_db(transaction=True)
def test_a_long_parameter_opens_to_its_whole_tail(page, reviewer, vlevel_api):
    from playwright.sync_api import expect

    item = asks_to_run(vlevel_api, LONG)

    log_in(page, "rita")
    row = row_of(page, item.pk)
    row.get_by_role("button", name="Details").click()
    tail = row.get_by_text(TAIL)
    expect(tail).to_be_hidden()  # collapsed: the summary says how long it is
    row.locator("details.full-value summary").click()
    expect(tail).to_be_visible()
