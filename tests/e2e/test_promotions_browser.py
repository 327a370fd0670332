"""Promotions of learnings reviewed in a real browser: one approved by its own button, two more
ticked and approved in one go; each learning moves up one scope, each decision is rita's."""

from __future__ import annotations

from decimal import Decimal

import pytest

from governance.reviews.models import ReviewDecision
from memory import lifecycle
from memory.models import Learning, PromotionProposal
from tests.e2e.test_inbox_browser import log_in, row_of
from tests.factories.memory import LearningFactory, ReuseScoreFactory


def proposed(story: str) -> Learning:
    item = LearningFactory.create(story=story, tags=[f"#{story.lower()}"], text=f"What {story} taught us")
    ReuseScoreFactory(story=story, gate=item.gate, tags_hash=item.tags_hash, reuse_score=Decimal("0.6"))
    return item


@pytest.mark.django_db(transaction=True)
def test_a_reviewer_approves_promotions_one_by_one_and_in_bulk(page, reviewer):
    from playwright.sync_api import expect

    learnings = [proposed(f"PD-{n}") for n in (1, 2, 3)]
    lifecycle.propose_promotions(mode="review")
    items = {p.learning_id: p.review_item_id for p in PromotionProposal.objects.all()}

    log_in(page, "rita")
    first = row_of(page, items[learnings[0].pk])
    expect(first).to_contain_text("Promote a story learning of PD-1 to domain")
    first.get_by_role("button", name=f"Approve #{items[learnings[0].pk]}").click()
    expect(first.locator(".outcome")).to_contain_text("Approved by rita at ")

    for learning in learnings[1:]:
        row_of(page, items[learning.pk]).get_by_label(f"Select item #{items[learning.pk]}").check()
    page.get_by_role("button", name="Approve selected").click()
    expect(page.locator(".messages")).to_contain_text("Approved 2")

    assert set(Learning.objects.values_list("scope", flat=True)) == {"domain"}
    assert set(ReviewDecision.objects.values_list("decision", "user__username")) == {("approve", "rita")}
    assert ReviewDecision.objects.count() == 3
