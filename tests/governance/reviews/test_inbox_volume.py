"""The inbox at volume (issue 17.1): filters by kind, agent and domain with paging, the pending
count in the navigation bar, "select all matching" decided once per item with who and when, human
kind labels with the text decided on shown inline; and the hostile callers of the bulk decision."""

from __future__ import annotations

import re

import pytest
from django.template.loader import render_to_string
from django.test import Client, RequestFactory
from django.urls import reverse

from governance.kernel.principals import SYSTEM, Principal
from governance.reviews import services as reviews
from governance.reviews.models import ReviewDecision, ReviewItem
from governance.reviews.views import ITEMS_PER_PAGE, pending_badge
from tests.factories.agents import AgentFactory
from tests.governance.reviews.test_inbox import HTMX, as_user

MATCHING = reverse("reviews:inbox-bulk-matching")


def promotion(n: int, domain: str = "seo", text: str = "") -> ReviewItem:
    return reviews.open_item(
        actor=SYSTEM,
        kind="learning_promotion",
        title=f"Promote a story learning of P-{n} to domain",
        payload={"from": "story", "to": "domain", "text": text or f"What P-{n} taught us", "domain": domain},
    )


def tool_call(agent, n: int) -> ReviewItem:
    return reviews.open_item(
        actor=SYSTEM,
        kind="tool_approval",
        title=f"{agent.agent_id} asks to call crm.update #{n}",
        agent=agent,
        payload={"toolId": "crm.update", "permission": "write", "arguments": {"id": n}, "argumentsHash": "x"},
    )


def ids_on(response) -> list[int]:
    return [int(pk) for pk in re.findall(r'data-item-id="(\d+)"', response.content.decode())]


def badge(response) -> str:
    """The count the navigation bar's inbox badge shows ("" when nothing is pending)."""
    match = re.search(
        r'<span id="inbox-badge"[^>]*>(?: <span class="count"[^>]*>([\d+]+)</span>)?</span>', response.content.decode()
    )
    assert match, "no inbox badge"
    return match.group(1) or ""


@pytest.fixture
def crm(db):
    return AgentFactory(agent_id="agent.crm.sync", domain="crm")


@pytest.mark.django_db
def test_the_inbox_shows_one_page_at_a_time_and_pages_on(client, reviewer):
    items = [promotion(n) for n in range(ITEMS_PER_PAGE + 5)]
    as_user(client, reviewer)

    first = client.get(reverse("reviews:inbox"))
    second = client.get(reverse("reviews:inbox"), {"page": 2})

    assert ids_on(first) == [item.pk for item in items[:ITEMS_PER_PAGE]]
    assert ids_on(second) == [item.pk for item in items[ITEMS_PER_PAGE:]]
    assert "Page 1 of 2" in first.content.decode()
    assert f'(<span id="matching-count">{len(items)}</span> matching)' in first.content.decode()


@pytest.mark.django_db
def test_filters_by_kind_agent_and_domain_keep_the_paging(client, reviewer, agent, crm):
    promotions = [promotion(n, domain="seo") for n in range(3)]
    crm_promotion = promotion(9, domain="crm")
    seo_calls = [tool_call(agent, n) for n in range(2)]
    crm_calls = [tool_call(crm, n) for n in range(2)]
    as_user(client, reviewer)
    inbox = reverse("reviews:inbox")

    by_kind = client.get(inbox, {"kind": "tool_approval"})
    by_agent = client.get(inbox, {"agent": crm.agent_id})
    by_domain = client.get(inbox, {"domain": "crm"})
    both = client.get(inbox, {"kind": "learning_promotion", "domain": "seo"})
    gone = client.get(inbox, {"agent": "agent.nobody"})

    assert ids_on(by_kind) == [item.pk for item in seo_calls + crm_calls]
    assert ids_on(by_agent) == [item.pk for item in crm_calls]
    assert ids_on(by_domain) == [crm_promotion.pk] + [item.pk for item in crm_calls]
    assert ids_on(both) == [item.pk for item in promotions]
    assert ids_on(gone) == []  # a filter nothing matches any more matches nothing, not everything
    assert '<option value="tool_approval" selected>Tool call</option>' in by_kind.content.decode()


@pytest.mark.django_db
def test_the_live_refresh_keeps_the_filters_and_the_page(client, reviewer, agent):
    promotions = [promotion(n) for n in range(2)]
    calls = [tool_call(agent, n) for n in range(2)]
    as_user(client, reviewer)
    page = client.get(reverse("reviews:inbox"), {"kind": "tool_approval"}).content.decode()
    assert f'hx-get="{reverse("reviews:inbox-pending")}?kind=tool_approval"' in page

    later = tool_call(agent, 3)
    promotion(5)
    poll = client.get(reverse("reviews:inbox-pending"), {"kind": "tool_approval", "row": [c.pk for c in calls]}, **HTMX)

    assert ids_on(poll) == [later.pk]  # the new promotion does not match the filter
    assert badge(poll) == str(len(promotions) + len(calls) + 2)


@pytest.mark.django_db
def test_the_navigation_bar_counts_the_pending_items_in_one_query(
    client, reviewer, outsider, agent, django_assert_num_queries
):
    for n in range(3):
        tool_call(agent, n)
    decided = promotion(1)
    reviews.decide(decided.pk, actor=Principal(user=reviewer), decision="approve")
    as_user(client, reviewer)

    assert badge(client.get(reverse("sessions:session-list"))) == "3"
    request = RequestFactory().get("/")
    request.user = reviewer
    with django_assert_num_queries(1):
        assert str(pending_badge(request)["inbox_pending_count"]) == "3"
    assert "3 pending" in render_to_string(
        "governance/reviews/partials/inbox_badge.html", {"count": pending_badge(request)["inbox_pending_count"]}
    )
    request.user = outsider
    assert str(pending_badge(request)["inbox_pending_count"]) == ""


@pytest.mark.django_db
def test_rows_show_human_labels_and_the_text_decided_on(client, reviewer, agent):
    long_text = "Always check the canonical tag first. " * 20
    promotion(1, text=long_text)
    tool_call(agent, 7)
    page = as_user(client, reviewer).get(reverse("reviews:inbox")).content.decode()

    assert '<span class="kind-badge">Learning promotion</span>' in page
    assert '<span class="kind-badge">Tool call</span>' in page
    assert "learning_promotion</span>" not in page
    assert '<details class="decides"><summary>Always check the canonical tag first.' in page
    assert long_text.strip() in page  # the whole text, one click away
    assert "crm.update({&quot;id&quot;: 7})" in page
    assert "keys-help" in page


@pytest.mark.django_db
def test_select_all_matching_decides_every_page_once_with_who_and_when(client, reviewer, agent):
    seo = [promotion(n, domain="seo") for n in range(ITEMS_PER_PAGE + 10)]
    crm = promotion(99, domain="crm")
    as_user(client, reviewer)
    page = client.get(reverse("reviews:inbox"), {"domain": "seo"}).content.decode()
    assert f'hx-confirm="Approve all {len(seo)} items matching the filters, on every page?' in page
    upto = re.search(r'name="upto" value="(\d+)"', page).group(1)

    response = client.post(MATCHING, {"domain": "seo", "decision": "approve", "count": len(seo), "upto": upto}, **HTMX)

    assert response.status_code == 200
    assert response["HX-Redirect"] == f"{reverse('reviews:inbox')}?domain=seo"
    decisions = ReviewDecision.objects.filter(item__in=seo)
    assert decisions.count() == len(seo)
    assert set(decisions.values_list("decision", "user__username", "decided_by")) == {("approve", "rita", "user:rita")}
    assert all(decision.decided_at is not None for decision in decisions)
    assert ReviewItem.objects.get(pk=crm.pk).status == "pending"
    messages = client.get(reverse("reviews:inbox")).content.decode()
    assert f"Approved {len(seo)} items." in messages


@pytest.mark.django_db
def test_select_all_matching_skips_and_reports_items_decided_meanwhile_or_new(client, reviewer, admin_operator):
    items = [promotion(n) for n in range(5)]
    as_user(client, reviewer)
    reviews.decide(items[0].pk, actor=Principal(user=admin_operator), decision="reject")
    newer = promotion(6)  # came after the page counted 5

    client.post(MATCHING, {"decision": "approve", "count": 5, "upto": items[-1].pk})

    statuses = dict(ReviewItem.objects.values_list("pk", "status"))
    assert statuses[items[0].pk] == "rejected"  # never decided twice
    assert ReviewDecision.objects.get(item=items[0]).user == admin_operator
    assert [statuses[item.pk] for item in items[1:]] == ["approved"] * 4
    assert statuses[newer.pk] == "pending"
    page = client.get(reverse("reviews:inbox")).content.decode()
    assert "Approved 4 items." in page
    assert "Skipped 1 item: decided meanwhile, past their deadline or changed since shown." in page


@pytest.mark.django_db
def test_select_all_matching_rejects_in_bulk(client, reviewer):
    items = [promotion(n) for n in range(3)]
    as_user(client, reviewer).post(MATCHING, {"decision": "reject", "count": 3, "upto": items[-1].pk})
    assert set(ReviewItem.objects.values_list("status", flat=True)) == {"rejected"}


@pytest.mark.django_db
@pytest.mark.parametrize(
    "data",
    [
        {"decision": "answer", "count": "3", "upto": "999999"},
        {"decision": "expire", "count": "3", "upto": "999999"},
        {"decision": "approve", "count": "3"},
        {"decision": "approve", "count": "3", "upto": "999999", "kind": "x" * 51},
    ],
)
def test_a_malformed_bulk_decision_is_refused_and_decides_nothing(client, reviewer, data):
    for n in range(3):
        promotion(n)
    response = as_user(client, reviewer).post(MATCHING, data)
    assert response.status_code == 400
    assert not ReviewDecision.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("who", ["viewer", "outsider"])
def test_only_reviewers_may_select_all_matching(client, who, request):
    items = [promotion(n) for n in range(3)]
    response = as_user(client, request.getfixturevalue(who)).post(
        MATCHING, {"decision": "approve", "count": 3, "upto": items[-1].pk}
    )
    assert response.status_code == 403
    assert not ReviewDecision.objects.exists()
    assert set(ReviewItem.objects.values_list("status", flat=True)) == {"pending"}


@pytest.mark.django_db
def test_select_all_matching_without_the_csrf_token_is_refused(reviewer):
    items = [promotion(n) for n in range(3)]
    client = Client(enforce_csrf_checks=True)
    client.force_login(reviewer)
    response = client.post(MATCHING, {"decision": "approve", "count": 3, "upto": items[-1].pk})
    assert response.status_code == 403
    assert not ReviewDecision.objects.exists()


@pytest.mark.django_db
def test_select_all_matching_needs_a_post(client, reviewer):
    promotion(1)
    assert as_user(client, reviewer).get(MATCHING).status_code == 405
    assert client.logout() is None
    assert client.post(MATCHING, {"decision": "approve", "count": 1, "upto": 1}).status_code == 302
    assert not ReviewDecision.objects.exists()


@pytest.mark.django_db
def test_the_navigation_bar_count_stops_at_999(client, reviewer):
    ReviewItem.objects.bulk_create(ReviewItem(kind="escalation", title=f"e{n}") for n in range(1000))
    page = as_user(client, reviewer).get(reverse("sessions:session-list"))
    assert badge(page) == "999+"
