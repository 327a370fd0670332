"""Reviewers approve what they read, all of it: every kind of inbox item shows its full content
(long parts collapsed, never cut), and a decision binds to the content shown: the form posts its
hash, and an item whose content changed since is refused (409), nothing decided.

Finding 9: a validation item showed each action's parameters cut to 80 characters, so
`...LIMIT 100; DROP TABLE customers` was approved without its tail being seen."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from governance.kernel.principals import SYSTEM
from governance.reviews import services as reviews
from governance.reviews.models import ReviewDecision, ReviewItem
from tests.governance.reviews.test_inbox import send, start_chat, waiting_item
from tests.sessions.test_session_flow import ai
from tests.support.api import Api
from tests.support.keys import issue_key
from tests.support.refusals import nothing_written

HTMX = {"HTTP_HX_REQUEST": "true"}
TAIL = "DROP TABLE customers"
QUERY = (
    "SELECT id, name, email, created_at FROM customers WHERE created_at > now() - interval '1 day' LIMIT 100; " + TAIL
)
LONG = "x" * 3000 + " " + TAIL  # long enough to be collapsed
SQL_TOOL = "mcp__supabase__execute_sql"  # granted by agent.seo.vlevel's manifest


@pytest.fixture
def browser(reviewer) -> Client:
    browser = Client()
    browser.force_login(reviewer)
    return browser


def sql(query: str) -> dict[str, Any]:
    return {"type": SQL_TOOL, "params": {"query": query}}


def asks_to_run(api: Api, query: str = QUERY) -> ReviewItem:
    """A CHAT whose AI answer wants a database query run (a tool its manifest grants) and asks a
    reviewer first."""
    session_id = start_chat(api, "Clean up the customers")
    send(api, session_id, {"type": "UserMessageSent", "payload": {"text": "count yesterday's customers"}})
    send(api, session_id, ai(preText="I will query the database.", validationRequest=True, actionCommands=[sql(query)]))
    return waiting_item(session_id)


def row(browser: Client, item: ReviewItem) -> str:
    html = browser.get(reverse("reviews:inbox")).content.decode()
    found = re.search(rf'<article [^>]*id="review-item-{item.pk}".*?</article>', html, re.S)
    assert found, f"item {item.pk} is not in the inbox"
    return found.group(0)


def shown_hash(html: str) -> str:
    found = re.search(r'name="shown" value="([0-9a-f]{64})"', html)
    assert found, "the row posts no hash of what it shows"
    return found.group(1)


def decide(browser: Client, item: ReviewItem, shown: str | None, htmx: bool = False, **data: str) -> Any:
    form = {"decision": "approve", **data, **({"shown": shown} if shown is not None else {})}
    headers: dict[str, Any] = HTMX if htmx else {}
    return browser.post(reverse("reviews:inbox-decide", args=[item.pk]), form, **headers)


@pytest.mark.django_db
def test_the_reviewer_sees_the_whole_query_before_approving(vlevel_api, browser):
    item = asks_to_run(vlevel_api)

    html = row(browser, item)

    assert TAIL in html
    assert "LIMIT 100; DROP TABLE customers" in html


@pytest.mark.django_db
def test_a_long_parameter_is_collapsed_but_whole(vlevel_api, browser):
    item = asks_to_run(vlevel_api, LONG)

    html = row(browser, item)

    assert "<details" in html
    assert LONG in html


def long_items(agent) -> list[ReviewItem]:
    """One pending item of every kind the inbox renders, each with a long part ending in TAIL."""
    session = {"session": "00000000-0000-0000-0000-000000000000", "sessionName": "S", "lastAiMessage": LONG}
    payloads: dict[str, dict[str, Any]] = {
        "session_validation": {
            **session,
            "validationContext": {"actions": ["Run db_query with sql=…"], "reasons": [LONG], "warnings": [LONG]},
            "actionCommands": [{"type": "db_query", "params": {"sql": LONG}}],
        },
        "session_communication": {
            **session,
            "module": {"type": "MultipleChoice", "data": {"question": LONG, "options": ["Home", LONG]}},
        },
        "tool_approval": {
            "toolId": "db_query",
            "permission": "write",
            "arguments": {"sql": LONG},
            "argumentsHash": "0" * 64,
            "job": None,
        },
        "escalation": {
            "escalation": 0,
            "job": "00000000-0000-0000-0000-000000000000",
            "triggers": [LONG],
            "output": {"data": LONG},
        },
        "agent.approval": {"details": LONG, "payload": {"sql": LONG}, "payloadHash": "0" * 64},
        "learning_promotion": {"text": LONG, "from": "story", "to": "domain", "tags": ["#x"], "domain": "seo"},
        "something_new": {"anything": LONG},
    }
    return [
        reviews.open_item(actor=SYSTEM, kind=kind, title=f"{kind} item", payload=payload, agent=agent)
        for kind, payload in payloads.items()
    ]


@pytest.mark.django_db
def test_every_kind_shows_its_long_parts_whole_and_posts_their_hash(vlevel, browser):
    for item in long_items(vlevel):
        html = row(browser, item)

        assert LONG in html, item.kind
        assert shown_hash(html) == reviews.payload_hash(item.payload), item.kind


@pytest.mark.django_db
def test_a_decision_on_content_changed_since_it_was_shown_is_refused(vlevel_api, browser):
    item = asks_to_run(vlevel_api, "SELECT count(*) FROM customers")
    shown = shown_hash(row(browser, item))
    ReviewItem.objects.filter(pk=item.pk).update(payload={**item.payload, "actionCommands": [sql(QUERY)]})

    with nothing_written():
        refused = decide(browser, item, shown)
    swapped = decide(browser, item, shown, htmx=True)

    assert refused.status_code == 409
    assert "changed since" in refused.content.decode()
    assert swapped.status_code == 200
    assert TAIL in swapped.content.decode()  # the row shows what it says now, to decide again
    assert ReviewItem.objects.get(pk=item.pk).status == "pending"


@pytest.mark.django_db
def test_the_decision_records_the_hash_of_what_was_shown(vlevel_api, browser):
    item = asks_to_run(vlevel_api)
    shown = shown_hash(row(browser, item))

    response = decide(browser, item, shown)

    assert response.status_code == 200, response.content
    assert ReviewDecision.objects.get(item=item).payload_hash == shown


@pytest.mark.django_db
def test_a_decision_that_names_no_shown_content_is_refused(vlevel_api, browser):
    item = asks_to_run(vlevel_api)

    with nothing_written():
        response = decide(browser, item, None)

    assert response.status_code == 400
    assert ReviewItem.objects.get(pk=item.pk).status == "pending"


@pytest.mark.django_db
def test_the_api_decision_binds_to_the_payload_hash_it_read(vlevel_api, client, reviewer):
    item = asks_to_run(vlevel_api)
    operator = Api(client, issue_key(user=reviewer))
    read = next(row for row in operator.get("/reviews").json()["items"] if row["id"] == item.pk)
    ReviewItem.objects.filter(pk=item.pk).update(payload={**item.payload, "lastAiMessage": "changed"})

    refused = operator.post(f"/reviews/{item.pk}/decision", {"decision": "approve", "payloadHash": read["payloadHash"]})
    fresh = operator.get("/reviews").json()["items"][0]["payloadHash"]
    decided = operator.post(f"/reviews/{item.pk}/decision", {"decision": "approve", "payloadHash": fresh})

    assert read["payloadHash"] == reviews.payload_hash(item.payload)
    assert refused.status_code == 409
    assert decided.status_code == 200, decided.content
    assert decided.json()["payloadHash"] == fresh
