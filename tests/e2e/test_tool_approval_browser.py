"""An approval-gated tool call, end to end: the agent asks, a reviewer approves it in a real
browser, the agent's call then goes through once."""

from __future__ import annotations

import pytest

from agents.models import ToolCall
from tests.e2e.test_inbox_browser import log_in, row_of

SNAPSHOT = "/agents/agent.seo.vlevel/tools/mcp__chrome-devtools__take_snapshot/calls"
CALL = {"arguments": {"url": "https://shop.example.com/checkout"}}


@pytest.mark.django_db(transaction=True)
def test_a_reviewer_approves_a_tool_call_in_the_browser_and_it_goes_through_once(page, reviewer, vlevel_api):
    from playwright.sync_api import expect

    asked = vlevel_api.post(SNAPSHOT, CALL)
    assert asked.status_code == 202
    item_id = asked.json()["reviewItemId"]

    log_in(page, "rita")
    row = row_of(page, item_id)
    expect(row).to_contain_text("Tool call")
    expect(row).to_contain_text("mcp__chrome-devtools__take_snapshot")
    expect(row).to_contain_text("https://shop.example.com/checkout")
    row.get_by_role("button", name="Details").click()
    row.get_by_role("button", name="Approve", exact=True).click()
    expect(row.locator(".outcome")).to_contain_text("Approved by rita at ")

    assert vlevel_api.post(SNAPSHOT, CALL).status_code == 201
    assert vlevel_api.post(SNAPSHOT, CALL).status_code == 202
    assert ToolCall.objects.count() == 1
