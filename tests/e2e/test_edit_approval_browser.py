"""Edit, then approve (issue 37 point 3) in Chromium, at 1440 and at 390 px: the reviewer opens a
tool call's row, edits its arguments in the JSON editor and approves the edited call; the row then
shows it approved with the edited arguments and what changed, and the agent's call is bound to
them. JSON that is not JSON is refused in the row, with the reviewer's text kept to be fixed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agents.models import ToolCall
from governance.reviews.models import ReviewDecision, ReviewItem
from tests.e2e.test_inbox_browser import log_in, row_of

SNAPSHOT = "/agents/agent.seo.vlevel/tools/mcp__chrome-devtools__take_snapshot/calls"
HOME = {"url": "https://shop.example.com/"}
CHECKOUT = {"url": "https://shop.example.com/checkout", "fullPage": True}
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}


def no_horizontal_overflow(page: Any) -> None:
    assert page.evaluate("document.scrollingElement.scrollWidth") <= page.evaluate("window.innerWidth")


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1440px", "390px"])
@pytest.mark.django_db(transaction=True)
def test_a_reviewer_edits_the_arguments_and_approves_the_edited_call(page, reviewer, vlevel_api, viewport):
    from playwright.sync_api import expect

    asked = vlevel_api.post(SNAPSHOT, {"arguments": HOME})
    item_id = asked.json()["reviewItemId"]
    violations: list[str] = []
    page.on("console", lambda message: "Content Security Policy" in message.text and violations.append(message.text))
    page.set_viewport_size(viewport)
    log_in(page, "rita")

    row = row_of(page, item_id)
    row.get_by_role("button", name="Details").click()
    row.get_by_text("Edit arguments").click()
    editor = row.get_by_label("The arguments to approve instead, as a JSON object")
    expect(editor).to_be_visible()
    assert json.loads(editor.input_value()) == HOME  # prefilled with what the agent asked for
    expect(row).to_contain_text("No input schema is known for this tool: any JSON object is accepted.")
    no_horizontal_overflow(page)

    editor.fill('{"url": ')
    row.get_by_role("button", name="Approve edited").click()
    expect(row.locator(".error")).to_contain_text("The edited arguments are not JSON")
    expect(editor).to_have_value('{"url": ')  # the reviewer's text, kept to be fixed
    assert ReviewItem.objects.get(pk=item_id).status == "pending"

    editor.fill(json.dumps(CHECKOUT, indent=2))
    row.get_by_role("button", name="Approve edited").click()
    expect(row.locator(".outcome")).to_contain_text("Approved by rita at ")
    edited = row.get_by_role("region", name="Approved with edited arguments")
    expect(edited).to_be_visible()
    expect(edited).to_contain_text("/url")
    expect(edited).to_contain_text("/fullPage: added true")
    expect(edited).to_contain_text("https://shop.example.com/checkout")
    no_horizontal_overflow(page)
    assert violations == []

    decision = ReviewDecision.objects.get(item_id=item_id)
    assert (decision.user, decision.amended["arguments"]) == (reviewer, CHECKOUT)
    assert vlevel_api.post(SNAPSHOT, {"arguments": HOME}).status_code == 409  # not what was approved
    assert vlevel_api.post(SNAPSHOT, {"arguments": CHECKOUT}).status_code == 201
    assert ToolCall.objects.count() == 1
