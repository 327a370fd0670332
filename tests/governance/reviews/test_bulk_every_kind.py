"""Bulk decisions for every kind (issue 37 point 1): the items ticked on a page, or all that the
filters match, each decided on its own terms (bound to the hash its row showed, its own deadline,
its own audit row with the reviewer); questions answered together with an answer they offer; the
page comes back with its filters, sort and page. And the hostile callers."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM
from governance.reviews import services as reviews
from governance.reviews.models import ReviewDecision, ReviewItem
from tests.governance.reviews.test_inbox import HTMX, as_user
from tests.support.keys import issue_key

SELECTED = reverse("reviews:inbox-bulk-selected")
MATCHING = reverse("reviews:inbox-bulk-matching")
QUESTION = {"type": "MultipleChoice", "data": {"question": "Where?", "options": ["staging", "production"]}}


def item(kind: str, title: str, **payload) -> ReviewItem:
    return reviews.open_item(actor=SYSTEM, kind=kind, title=title, payload=payload)


def box(entry: ReviewItem) -> str:
    return f"{entry.pk}:{entry.content_hash}"


@pytest.fixture
def mixed(db) -> dict[str, ReviewItem]:
    return {
        "escalation": item("escalation", "Escalated job", job="j-1", triggers=["low confidence"]),
        "promotion": item("learning_promotion", "Promote a learning", text="canonical tags", domain="seo"),
        "question": item("session_communication", "Where?", module=QUESTION),
        "other_question": item("session_communication", "Which?", module={**QUESTION, "data": {"options": ["a"]}}),
        "definition": item("gateway.tool_definition", "A changed tool", toolId="x", change="changed"),
    }


def status(entry: ReviewItem) -> str:
    return ReviewItem.objects.get(pk=entry.pk).status


@pytest.mark.django_db
def test_approving_the_selected_items_decides_each_kind_on_its_own_terms(client, reviewer, mixed):
    response = as_user(client, reviewer).post(
        SELECTED, {"items": [box(entry) for entry in mixed.values()], "decision": "approve"}, follow=True
    )

    html = response.content.decode()
    assert (status(mixed["escalation"]), status(mixed["promotion"])) == ("approved", "approved")
    # A question is answered, never approved; a changed tool definition is read one by one.
    assert {status(mixed[name]) for name in ("question", "other_question", "definition")} == {"pending"}
    assert "Approved 2 items." in html
    assert "Skipped 3 items: not decided this way" in html
    decided = ReviewDecision.objects.filter(user=reviewer)
    assert sorted(decided.values_list("item_id", flat=True)) == sorted([mixed["escalation"].pk, mixed["promotion"].pk])
    audited = AuditEvent.objects.filter(action="review.approve", actor="user:rita")
    assert sorted(int(target) for target in audited.values_list("target_id", flat=True)) == sorted(
        decided.values_list("item_id", flat=True)
    )


@pytest.mark.django_db
def test_questions_take_a_common_answer_only_when_they_offer_it(client, reviewer, mixed):
    as_user(client, reviewer).post(
        SELECTED,
        {
            "items": [box(mixed["question"]), box(mixed["other_question"]), box(mixed["promotion"])],
            "decision": "answer",
            "answer": "staging",
        },
    )

    assert ReviewDecision.objects.get(item=mixed["question"]).answer == "staging"
    assert status(mixed["question"]) == "answered"
    assert status(mixed["other_question"]) == "pending"  # "staging" is not one of its options
    assert status(mixed["promotion"]) == "pending"


@pytest.mark.django_db
def test_an_item_that_changed_since_its_row_was_shown_is_skipped(client, reviewer, mixed):
    shown = box(mixed["escalation"])
    ReviewItem.objects.filter(pk=mixed["escalation"].pk).update(payload={"job": "j-2", "triggers": ["other"]})

    response = as_user(client, reviewer).post(SELECTED, {"items": [shown], "decision": "approve"}, follow=True)

    assert status(mixed["escalation"]) == "pending"
    assert "Skipped 1 item: decided meanwhile, past their deadline or changed since shown." in response.content.decode()


@pytest.mark.django_db
def test_an_item_past_its_deadline_is_never_decided_in_bulk(client, reviewer):
    late = reviews.open_item(
        actor=SYSTEM, kind="escalation", title="Late", payload={}, expires_at=timezone.now() - timedelta(minutes=1)
    )
    as_user(client, reviewer).post(SELECTED, {"items": [box(late)], "decision": "approve"})
    assert status(late) == "pending"
    assert not ReviewDecision.objects.exists()


@pytest.mark.django_db
def test_the_page_comes_back_with_its_filters_sort_and_page(client, reviewer, mixed):
    back = urlencode({"kind": "escalation", "sort": "newest", "page": "2", "next": "https://evil.example/"})
    plain = as_user(client, reviewer).post(
        SELECTED, {"items": [box(mixed["escalation"])], "decision": "reject", "back": back}
    )
    htmx = client.post(
        MATCHING,
        {
            "kind": "learning_promotion",
            "decision": "reject",
            "count": 1,
            "upto": mixed["promotion"].pk,
            "back": "kind=learning_promotion&page=3",
        },
        **HTMX,
    )

    assert plain["Location"] == f"{reverse('reviews:inbox')}?kind=escalation&sort=newest&page=2"
    assert htmx["HX-Redirect"] == f"{reverse('reviews:inbox')}?kind=learning_promotion&page=3"
    assert (status(mixed["escalation"]), status(mixed["promotion"])) == ("rejected", "rejected")


@pytest.mark.django_db
def test_all_matching_takes_every_kind_the_filters_match_but_those_decided_one_by_one(client, reviewer, mixed):
    upto = max(entry.pk for entry in mixed.values())
    page = as_user(client, reviewer).get(reverse("reviews:inbox")).content.decode()
    assert 'aria-label="Approve all 4 matching"' in page  # the tool definition is not counted

    client.post(MATCHING, {"decision": "approve", "count": 4, "upto": upto})

    assert (status(mixed["escalation"]), status(mixed["promotion"])) == ("approved", "approved")
    assert {status(mixed[name]) for name in ("question", "other_question", "definition")} == {"pending"}


# The hostile callers ------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    "form",
    [
        {"decision": "expire"},
        {"decision": "answer"},  # an answer needs the answer
        {"decision": "approve", "answer": "staging"},  # and only an answer takes one
        {},
    ],
)
def test_a_malformed_selection_is_refused_and_decides_nothing(client, reviewer, mixed, form):
    response = as_user(client, reviewer).post(SELECTED, {"items": [box(mixed["escalation"])], **form})
    assert response.status_code == 400
    assert not ReviewDecision.objects.exists()


@pytest.mark.django_db
def test_boxes_without_the_hash_of_what_was_shown_decide_nothing(client, reviewer, mixed):
    entry = mixed["escalation"]
    garbage = [str(entry.pk), f"{entry.pk}:", f"{entry.pk}:{'0' * 63}", "x:y", f"-{entry.pk}:{entry.content_hash}"]
    response = as_user(client, reviewer).post(SELECTED, {"items": garbage, "decision": "approve"}, follow=True)

    assert "Select the items to decide first." in response.content.decode()
    assert not ReviewDecision.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("who", ["viewer", "outsider"])
def test_only_reviewers_decide_in_bulk(client, mixed, who, request):
    response = as_user(client, request.getfixturevalue(who)).post(
        SELECTED, {"items": [box(mixed["escalation"])], "decision": "approve"}
    )
    assert response.status_code == 403
    assert not ReviewDecision.objects.exists()


@pytest.mark.django_db
def test_an_agent_key_cannot_decide_in_bulk(mixed, vlevel):
    agent = Client(HTTP_AUTHORIZATION=f"Bearer {issue_key(agent=vlevel)}")
    response = agent.post(SELECTED, {"items": [box(mixed["escalation"])], "decision": "approve"})
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))
    assert not ReviewDecision.objects.exists()


@pytest.mark.django_db
def test_a_bulk_decision_without_the_csrf_token_is_refused(reviewer, mixed):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(reviewer)
    response = browser.post(SELECTED, {"items": [box(mixed["escalation"])], "decision": "approve"})
    assert response.status_code == 403
    assert not ReviewDecision.objects.exists()
