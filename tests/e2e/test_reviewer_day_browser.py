"""The reviewer's day (issue 37) in Chromium, with 200 pending items of mixed kinds: a compact list
where 25 items fit one 1440 x 900 screen and the first is visible at 390 px with every action in
reach; the keyboard moves, opens, approves, rejects and selects; a bulk decision on selected items
binds each to what its row showed and brings the reviewer back to the same filters, sort and page;
questions are answered together; the list keeps itself current while another reviewer decides."""

from __future__ import annotations

from typing import Any

import pytest

from governance.kernel.principals import SYSTEM, Principal
from governance.reviews import services as reviews
from governance.reviews.models import ReviewDecision, ReviewItem
from tests.e2e.test_inbox_browser import log_in, row_of
from tests.support.manifests import manifest_text
from tests.support.volume import agents_of, mixed_inbox

DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
POLL_WAIT_MS = 10_000  # the list asks every 3 s


@pytest.fixture
def two_hundred(db) -> list[ReviewItem]:
    return mixed_inbox(agents_of(manifest_text("agent.seo.vlevel")))


def bottom_of_last_row(page: Any) -> float:
    return page.evaluate(
        "() => { const rows = document.querySelectorAll('#pending-items .review-item');"
        " return rows[rows.length - 1].getBoundingClientRect().bottom; }"
    )


def no_horizontal_overflow(page: Any) -> None:
    assert page.evaluate("document.scrollingElement.scrollWidth") <= page.evaluate("window.innerWidth")


@pytest.mark.django_db(transaction=True)
def test_a_page_of_25_fits_one_screen_and_the_phone_reaches_every_action(page, reviewer, two_hundred):
    from playwright.sync_api import expect

    page.set_viewport_size(DESKTOP)
    log_in(page, "rita")
    rows = page.locator("#pending-items .review-item")
    expect(rows).to_have_count(25)
    assert bottom_of_last_row(page) <= DESKTOP["height"], "the 25th item is below the first screen"
    no_horizontal_overflow(page)
    first = two_hundred[0]
    row = row_of(page, first.pk)
    expect(row.locator(".review-summary")).to_contain_text("mcp__chrome-devtools__take_snapshot({")

    page.set_viewport_size(PHONE)
    page.reload()
    top = row.bounding_box()
    assert top is not None
    assert top["y"] + top["height"] <= PHONE["height"], "the first item is below the first screen"
    no_horizontal_overflow(page)
    row.get_by_role("button", name="Details").click()
    expect(row.locator(".review-body")).to_be_visible()
    expect(row.get_by_label("Comment")).to_be_visible()
    for name in ("Approve", "Reject"):
        expect(row.locator(".decision-buttons").get_by_role("button", name=name)).to_be_visible()
    no_horizontal_overflow(page)
    row.locator(".decision-buttons").get_by_role("button", name="Reject").click()
    expect(row.locator(".outcome")).to_contain_text("Rejected by rita at ")
    assert ReviewItem.objects.get(pk=first.pk).status == "rejected"


@pytest.mark.django_db(transaction=True)
def test_the_keyboard_opens_decides_and_moves_on(page, reviewer, two_hundred):
    from playwright.sync_api import expect

    page.set_viewport_size(DESKTOP)
    log_in(page, "rita")
    first, second, third = two_hundred[:3]
    page.keyboard.press("j")
    expect(row_of(page, first.pk)).to_be_focused()
    page.keyboard.press("o")
    expect(row_of(page, first.pk).locator(".review-body")).to_be_visible()
    expect(row_of(page, first.pk).locator(".review-expand")).to_have_attribute("aria-expanded", "true")
    page.keyboard.press("o")
    expect(row_of(page, first.pk).locator(".review-body")).to_be_hidden()

    # Its line is clipped at this width: the first approval opens the item, the second approves.
    page.keyboard.press("a")
    expect(row_of(page, first.pk).locator(".review-body")).to_be_visible()
    assert not ReviewDecision.objects.exists()
    page.keyboard.press("a")
    expect(row_of(page, first.pk).locator(".outcome")).to_contain_text("Approved by rita at ")
    expect(row_of(page, second.pk)).to_be_focused()  # decided: on to the next one
    page.keyboard.press("r")
    expect(row_of(page, second.pk).locator(".outcome")).to_contain_text("Rejected by rita at ")
    expect(row_of(page, third.pk)).to_be_focused()
    # The item that moved up onto the page arrives without waiting for the poll.
    expect(row_of(page, two_hundred[25].pk)).to_be_visible(timeout=3_000)
    decisions = dict(ReviewDecision.objects.filter(user=reviewer).values_list("item_id", "decision"))
    assert decisions == {first.pk: "approve", second.pk: "reject"}


@pytest.mark.django_db(transaction=True)
def test_bulk_on_selected_items_keeps_filters_sort_and_page_and_binds_each_item(page, reviewer, two_hundred):
    from playwright.sync_api import expect

    page.set_viewport_size(DESKTOP)
    log_in(page, "rita")
    page.goto("/inbox/?kind=tool_approval&sort=newest&page=2")
    rows = page.locator("#pending-items .review-item")
    expect(rows).to_have_count(25)
    ids = [int(value) for value in rows.evaluate_all("rows => rows.map(row => row.dataset.itemId)")]
    chosen, changed = ids[:3], ids[3]
    for item_id in (*chosen, changed):
        row_of(page, item_id).focus()
        page.keyboard.press("x")
    # The agent's item changes after the reviewer read it: its box still names what was shown.
    ReviewItem.objects.filter(pk=changed).update(payload={"toolId": "shop.delete_everything", "arguments": {}})

    page.keyboard.press("A")
    page.wait_for_url("**/inbox/?kind=tool_approval&sort=newest&page=2")
    expect(page.locator(".messages")).to_contain_text("Approved 3 items.")
    expect(page.locator(".messages")).to_contain_text("Skipped 1 item: decided meanwhile")
    expect(page.get_by_label("Kind")).to_have_value("tool_approval")
    expect(page.get_by_label("Sort")).to_have_value("newest")
    expect(page.locator(".pager")).to_contain_text("Page 2 of")
    approved = ReviewDecision.objects.filter(user=reviewer, decision="approve")
    assert sorted(approved.values_list("item_id", flat=True)) == sorted(chosen)
    assert ReviewItem.objects.get(pk=changed).status == "pending"


@pytest.mark.django_db(transaction=True)
def test_questions_with_a_common_answer_are_answered_together(page, reviewer, two_hundred):
    from playwright.sync_api import expect

    questions = [item for item in two_hundred if item.kind == "session_communication"]
    page.set_viewport_size(DESKTOP)
    log_in(page, "rita")
    page.goto("/inbox/?kind=session_communication")
    page.get_by_label("All on page").check()
    page.get_by_label("Answer for the selected questions").select_option("staging")
    page.get_by_role("button", name="Answer selected").click()
    expect(page.locator(".messages")).to_contain_text(f"Answered {len(questions)} items.")
    answers = ReviewDecision.objects.filter(item__in=questions).values_list("decision", "answer", "user__username")
    assert set(answers) == {("answer", "staging", "rita")}


@pytest.mark.django_db(transaction=True)
def test_the_list_keeps_current_while_another_reviewer_decides(page, reviewer, admin_operator, two_hundred):
    from playwright.sync_api import expect

    page.set_viewport_size(DESKTOP)
    log_in(page, "rita")
    first = two_hundred[0]
    failures: list[str] = []
    page.on("response", lambda response: failures.append(response.url) if response.status >= 400 else None)

    reviews.decide(first.pk, actor=Principal(user=admin_operator), decision="approve")
    expect(row_of(page, first.pk).locator(".outcome")).to_contain_text("Approved by alice", timeout=POLL_WAIT_MS)
    expect(page.locator("#inbox-badge")).to_have_text("199")
    expect(page.locator("#matching-count")).to_have_text("199")
    expect(row_of(page, two_hundred[25].pk)).to_be_visible()

    newcomer = reviews.open_item(actor=SYSTEM, kind="escalation", title="A new escalation", payload={})
    page.goto("/inbox/?sort=newest")
    expect(row_of(page, newcomer.pk)).to_be_visible()
    assert failures == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1440", "390"])
def test_an_item_page_and_a_bulk_decision_at_each_width(page, reviewer, two_hundred, viewport):
    from playwright.sync_api import expect

    page.set_viewport_size(viewport)
    log_in(page, "rita")
    item = two_hundred[0]
    page.goto(f"/inbox/items/{item.pk}/")
    row = row_of(page, item.pk)
    expect(row.locator(".review-body")).to_be_visible()  # its own page shows it whole
    no_horizontal_overflow(page)
    row.get_by_role("button", name="Approve", exact=True).click()
    expect(row.locator(".outcome")).to_contain_text("Approved by rita at ")
    page.reload()
    expect(page.locator(".lead")).to_have_text("Approved: this item is no longer waiting for a decision.")

    page.goto("/inbox/?kind=learning_promotion")
    page.get_by_label("All on page").check()
    page.get_by_role("button", name="Reject selected").click()
    expect(page.locator(".messages")).to_contain_text("Rejected 25 items.")
    no_horizontal_overflow(page)
    promotions = [entry.pk for entry in two_hundred if entry.kind == "learning_promotion"]
    rejected = ReviewDecision.objects.filter(item__in=promotions, decision="reject", user=reviewer)
    assert rejected.count() == 25


@pytest.mark.django_db(transaction=True)
def test_the_keyboard_goes_on_past_the_last_item_shown(page, reviewer, two_hundred):
    from playwright.sync_api import expect

    page.set_viewport_size(DESKTOP)
    log_in(page, "rita")
    page.goto("/inbox/?kind=tool_approval")
    calls = [item for item in two_hundred if item.kind == "tool_approval"]
    page.keyboard.press("j")
    for item in calls[:25]:
        expect(row_of(page, item.pk)).to_be_focused()
        page.keyboard.press("r")
        expect(row_of(page, item.pk).locator(".outcome")).to_contain_text("Rejected by rita")
    # The 26th came onto the page when the others were decided, and has the focus: no j needed.
    expect(row_of(page, calls[25].pk)).to_be_focused()
    assert ReviewDecision.objects.filter(user=reviewer, decision="reject").count() == 25
