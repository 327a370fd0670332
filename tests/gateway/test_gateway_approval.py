"""An upstream tool whose manifest entry requires approval, through the gateway, end to end: the
agent's call waits, a reviewer decides it in a real browser, and only then does the same call
reach the upstream, once. A rejection stands for those arguments.

Real parts only: the SDK's client on /mcp of the live server, a real upstream MCP server, and
Debian's chromium driven by Playwright. Playwright's sync API marks its asyncio loop as running
in the test's thread, so the SDK client (``anyio.run``) runs in a thread of its own, and the ORM
calls between browser steps need DJANGO_ALLOW_ASYNC_UNSAFE (see tests/e2e/conftest.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

import pytest
from django.db import connections
from django.utils import timezone
from mcp.client.session import ClientSession

from agents.models import ToolCall, ToolGrant
from agents.registry import load_manifest
from gateway.models import UpstreamServer
from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM
from governance.reviews.models import ReviewDecision, ReviewItem
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, TIMEOUT_MS
from tests.e2e.test_inbox_browser import log_in, row_of
from tests.support.keys import issue_key
from tests.support.manifests import manifest_text
from tests.support.mcp import mcp_session
from tests.support.upstream import Upstream, upstream_server

pytestmark = pytest.mark.django_db(transaction=True)

SQL = "mcp__supabase__execute_sql"
COUNT = {"query": "select count(*) from pages"}
OTHER = {"query": "select count(*) from links"}
GATED = ("      rate_limit: 100", "      rate_limit: 100\n      requires_approval: true")


@pytest.fixture
def page(live_server: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A headless chromium page on the live server (as tests/e2e/conftest.py makes one)."""
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed: .ci/run installs it")
    sync_api = pytest.importorskip("playwright.sync_api")
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        context = browser.new_context(base_url=live_server.url)
        context.set_default_timeout(TIMEOUT_MS)
        try:
            yield context.new_page()
        finally:
            context.close()
            browser.close()
            connections.close_all()


@pytest.fixture
def gated(page: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Upstream]]:
    """agent.seo.vlevel's key, its manifest granting mcp__supabase__execute_sql (read) with
    ``requires_approval: true``, and the registered upstream that serves the tool."""
    text = manifest_text("agent.seo.vlevel")
    assert GATED[0] in text
    agent = load_manifest(text.replace(*GATED), actor=SYSTEM)[0].agent
    with upstream_server() as upstream:
        monkeypatch.setenv("UPSTREAM_TOKEN_SUPABASE", "upstream-secret-token")
        UpstreamServer.objects.create(
            name="supabase", url=upstream.url, secret_name="UPSTREAM_TOKEN_SUPABASE", internal=True
        )
        yield issue_key(agent=agent), upstream


def call(live_server: Any, key: str, arguments: dict[str, Any]) -> Any:
    """One tools/call of the SQL tool by the agent's SDK client, in a thread of its own (the
    test's thread has Playwright's loop marked as running, where ``anyio.run`` refuses)."""

    async def work(session: ClientSession) -> Any:
        return await session.call_tool(SQL, arguments)

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(mcp_session, live_server.url, key, work).result()


def refusal(result: Any) -> dict[str, Any]:
    assert result.is_error, result.content
    return json.loads(result.content[0].text)


def waiting(result: Any) -> int:
    """The review item a call waits for."""
    body = refusal(result)
    assert body["refusal"] == "PendingApproval", body
    assert "waits for a reviewer" in body["error"]
    return body["reviewItemId"]


def decide_in_the_browser(page: Any, item_id: int, button: str, comment: str) -> None:
    """rita logs in, finds the item in the inbox and decides it by clicking, as a person would."""
    from playwright.sync_api import expect

    log_in(page, "rita")
    row = row_of(page, item_id)
    expect(row).to_contain_text("Tool call")
    expect(row).to_contain_text(SQL)
    expect(row).to_contain_text("for one call with exactly these arguments")
    row.get_by_role("button", name="Details").click()
    row.get_by_label("Comment").fill(comment)
    row.locator(".decision-buttons").get_by_role("button", name=button).click()
    expect(row.locator("button.decision")).to_have_count(0)


def assert_decided(page: Any, item_id: int, decision: str, comment: str, since: datetime) -> ReviewDecision:
    """The decision log says what was decided, by whom and when; the page says the same."""
    from playwright.sync_api import expect

    logged = ReviewDecision.objects.select_related("user").get(item_id=item_id)
    assert logged.user is not None
    assert (logged.decision, logged.user.username, logged.decided_by) == (decision, "rita", "user:rita")
    assert logged.comment == comment
    assert since <= logged.decided_at <= timezone.now()
    status, display = {"approve": ("Approved", "Approve"), "reject": ("Rejected", "Reject")}[decision]
    when = timezone.localtime(logged.decided_at).strftime("%Y-%m-%d %H:%M:%S")
    expect(row_of(page, item_id).locator(".outcome")).to_contain_text(f"{status} by rita at {when}")
    page.reload()  # the recent decisions refresh with the 10 s poll; a reload shows them now
    recent = page.locator("#recent-decisions tbody tr").filter(has_text=f"#{item_id} ")
    expect(recent).to_contain_text(when)
    expect(recent).to_contain_text("rita")
    expect(recent).to_contain_text(comment)
    expect(recent.locator(f".outcome-{decision}")).to_have_text(display)
    audit = AuditEvent.objects.get(action=f"review.{decision}", target_id=str(item_id))
    assert audit.actor == "user:rita"
    assert audit.data["payload_hash"] == logged.payload_hash
    return logged


def test_an_approved_call_goes_through_once_and_the_next_one_waits_again(live_server, page, reviewer, gated):
    key, upstream = gated

    item_id = waiting(call(live_server, key, COUNT))
    assert upstream.calls == []  # waiting: nothing reached the upstream
    item = ReviewItem.objects.get(pk=item_id)
    assert (item.kind, item.status, item.payload["toolId"]) == ("tool_approval", "pending", SQL)
    assert item.payload["arguments"] == COUNT
    assert waiting(call(live_server, key, COUNT)) == item_id  # asking again answers the same item
    assert upstream.calls == []

    since = timezone.now()
    decide_in_the_browser(page, item_id, "Approve", "a count is harmless")
    assert_decided(page, item_id, "approve", "a count is harmless", since)

    approved = call(live_server, key, COUNT)
    assert not approved.is_error, approved.content
    assert approved.content[0].text == "rows for select count(*) from pages"
    assert upstream.calls == [("execute_sql", COUNT)]
    assert set(upstream.authorizations) == {"Bearer upstream-secret-token"}

    again = call(live_server, key, COUNT)
    assert waiting(again) != item_id  # the approval was used: the same call asks again
    assert upstream.calls == [("execute_sql", COUNT)]

    grant = ToolGrant.objects.get(review_item_id=item_id)
    forwarded = ToolCall.objects.get(tool_id=SQL)
    assert (grant.status, grant.tool_call_id) == ("used", forwarded.pk)
    assert AuditEvent.objects.filter(action="tool.grant_used", target_id=str(grant.pk)).exists()


def test_an_approval_does_not_cover_the_same_tool_with_other_arguments(live_server, page, reviewer, gated):
    key, upstream = gated
    item_id = waiting(call(live_server, key, COUNT))
    since = timezone.now()
    decide_in_the_browser(page, item_id, "Approve", "this count only")
    assert_decided(page, item_id, "approve", "this count only", since)

    other = call(live_server, key, OTHER)

    other_item_id = waiting(other)
    assert other_item_id != item_id
    assert ReviewItem.objects.get(pk=other_item_id).payload["arguments"] == OTHER
    assert upstream.calls == []
    assert not ToolCall.objects.exists()
    # The approval is still there, unused, for the call it was given for.
    assert ToolGrant.objects.get(review_item_id=item_id).status == "approved"
    assert not call(live_server, key, COUNT).is_error
    assert upstream.calls == [("execute_sql", COUNT)]


def test_a_call_rejected_in_the_browser_is_refused_and_never_forwarded(live_server, page, reviewer, gated):
    key, upstream = gated
    item_id = waiting(call(live_server, key, COUNT))
    since = timezone.now()

    decide_in_the_browser(page, item_id, "Reject", "not on production")
    assert_decided(page, item_id, "reject", "not on production", since)
    refused = refusal(call(live_server, key, COUNT))
    refused_again = refusal(call(live_server, key, COUNT))

    assert refused["refusal"] == "Forbidden"
    assert "A reviewer rejected this call" in refused["error"]
    assert refused["reviewItemId"] == item_id
    assert refused_again == refused  # a rejection stands: asking again opens no new item
    assert ReviewItem.objects.count() == 1
    assert ToolGrant.objects.get(review_item_id=item_id).status == "rejected"
    assert upstream.calls == []
    assert not ToolCall.objects.exists()
