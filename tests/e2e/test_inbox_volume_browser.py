"""The inbox at volume (issue 17.1) in a real browser, with 200 pending learning promotions: the
page stays short (one page of items), the navigation bar counts them, a kind filter narrows the
list, "select all matching" asks to confirm the count and decides all 200, and a keyboard
shortcut approves the focused item."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from governance.kernel.principals import SYSTEM
from governance.reviews import services as reviews
from governance.reviews.models import ReviewDecision, ReviewItem
from memory import lifecycle
from memory.models import Learning, PromotionProposal
from tests.e2e.test_inbox_browser import log_in, row_of
from tests.factories.memory import LearningFactory, ReuseScoreFactory

PENDING = 200
MAX_HEIGHT_PX = 20_000  # one page of items; the 200 on one page measured 34 223 px before paging
BULK_WAIT_MS = 120_000  # 200 promotions applied one decision each


def two_hundred_promotions() -> list[int]:
    for n in range(PENDING):
        story = f"VOL-{n}"
        learning = LearningFactory.create(story=story, tags=[f"#vol{n}"], text=f"What {story} taught us")
        ReuseScoreFactory(story=story, gate=learning.gate, tags_hash=learning.tags_hash, reuse_score=Decimal("0.6"))
    lifecycle.propose_promotions(mode="review")
    return list(PromotionProposal.objects.values_list("review_item_id", flat=True))


@pytest.mark.django_db(transaction=True)
def test_two_hundred_pending_items_are_filtered_paged_and_decided_all_at_once(page, reviewer):
    from playwright.sync_api import expect

    assert len(two_hundred_promotions()) == PENDING
    log_in(page, "rita")

    height = page.evaluate("document.body.scrollHeight")
    print(f"inbox height with {PENDING} pending items: {height} px")
    assert height < MAX_HEIGHT_PX
    expect(page.locator("#inbox-badge")).to_have_text(str(PENDING))
    expect(page.locator(".review-item").first.locator(".kind-badge")).to_have_text("Learning promotion")
    expect(page.locator(".review-item").first.locator(".review-summary")).to_have_text(
        re.compile(r"What VOL-\d+ taught us")
    )

    other = reviews.open_item(actor=SYSTEM, kind="memory_promotion", title="Promote a subject fact", payload={})
    page.get_by_label("Kind").select_option("learning_promotion")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**/inbox/?kind=learning_promotion*")
    expect(page.locator(".pending-section h2")).to_contain_text(f"({PENDING} matching)")

    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.accept()))
    page.get_by_role("button", name=f"Approve all {PENDING} matching").click()
    expect(page.locator(".messages")).to_contain_text(f"Approved {PENDING} items.", timeout=BULK_WAIT_MS)
    assert dialogs[0].startswith(f"Approve all {PENDING} items")
    assert ReviewDecision.objects.filter(decision="approve", user=reviewer).count() == PENDING
    assert set(Learning.objects.values_list("scope", flat=True)) == {"domain"}
    expect(page.locator("#inbox-badge")).to_have_text("1")

    rejected = reviews.open_item(actor=SYSTEM, kind="memory_promotion", title="Promote another fact", payload={})
    page.goto("/inbox/")
    row = row_of(page, other.pk)
    page.keyboard.press("j")
    expect(row).to_be_focused()
    page.keyboard.press("o")
    row.get_by_label("Comment").type("a reason")  # keys typed into a field decide nothing
    expect(row.get_by_label("Comment")).to_have_value("a reason")
    row.focus()
    page.keyboard.press("a")
    expect(row.locator(".outcome")).to_contain_text("Approved by rita at ")
    assert ReviewItem.objects.get(pk=other.pk).status == "approved"
    assert ReviewDecision.objects.get(item=other).comment == "a reason"
    expect(row_of(page, rejected.pk)).to_be_focused()  # decided: on to the next one
    page.keyboard.press("r")
    expect(row_of(page, rejected.pk).locator(".outcome")).to_contain_text("Rejected by rita at ")
    assert len(dialogs) == 1  # a single decision asks no confirmation
    page.goto("about:blank")  # closes the inbox's event stream before the test database goes
