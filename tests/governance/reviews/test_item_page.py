"""An inbox item's own page (issue 37 point 4): at a stable address that notifications, the audit
log and the CSV export link to; decided there as in the list; a decided or expired item says so
instead of a 404; readers of the inbox only."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from governance.kernel.principals import SYSTEM, Principal
from governance.reviews import services as reviews
from governance.reviews.models import ReviewItem
from tests.governance.reviews.test_inbox import HTMX, as_user
from tests.support.keys import issue_key


def page_of(item: ReviewItem) -> str:
    return reverse("reviews:item", args=[item.pk])


@pytest.fixture
def item(db) -> ReviewItem:
    return reviews.open_item(actor=SYSTEM, kind="escalation", title="Escalated job", payload={"job": "j-1"})


@pytest.mark.django_db
def test_a_pending_item_is_decided_on_its_page(client, reviewer, item):
    html = as_user(client, reviewer).get(page_of(item)).content.decode()

    assert "Waiting for a decision." in html
    assert f'id="review-body-{item.pk}">' in html  # opened, not hidden
    assert 'aria-expanded="true"' in html
    assert f'hx-post="{reverse("reviews:inbox-decide", args=[item.pk])}"' in html
    shown = ReviewItem.objects.get(pk=item.pk).content_hash
    decided = client.post(
        reverse("reviews:inbox-decide", args=[item.pk]), {"decision": "approve", "shown": shown}, **HTMX
    )
    assert "Approved by rita at " in decided.content.decode()


@pytest.mark.django_db
def test_a_decided_item_says_by_whom_and_when(client, viewer, admin_operator, item):
    reviews.decide(item.pk, actor=Principal(user=admin_operator), decision="reject", comment="not now")

    response = as_user(client, viewer).get(page_of(item))

    assert response.status_code == 200
    html = response.content.decode()
    assert "Rejected: this item is no longer waiting for a decision." in html
    assert "Rejected by alice at " in html
    assert "not now" in html
    assert "hx-post" not in html


@pytest.mark.django_db
def test_an_expired_item_says_it_expired(client, viewer):
    late = reviews.open_item(
        actor=SYSTEM,
        kind="learning_promotion",
        title="Late",
        payload={},
        expires_at=timezone.now() - timedelta(minutes=5),
    )
    reviews.expire_due()

    html = as_user(client, viewer).get(page_of(late)).content.decode()

    assert "Expired: this item is no longer waiting for a decision." in html
    assert "Expired by system at " in html


@pytest.mark.django_db
def test_a_viewer_reads_the_item_without_buttons(client, viewer, item):
    html = as_user(client, viewer).get(page_of(item)).content.decode()
    assert "Escalated job" in html
    assert "hx-post" not in html


@pytest.mark.django_db
def test_an_unknown_item_is_404_and_the_page_is_for_inbox_readers_only(client, outsider, vlevel, reviewer, item):
    assert as_user(client, reviewer).get(reverse("reviews:item", args=[item.pk + 1000])).status_code == 404
    anonymous = Client().get(page_of(item))
    with_key = Client().get(page_of(item), HTTP_AUTHORIZATION=f"Bearer {issue_key(agent=vlevel)}")
    refused = as_user(Client(), outsider).get(page_of(item))

    assert (anonymous.status_code, with_key.status_code, refused.status_code) == (302, 302, 403)
    assert anonymous["Location"].startswith(reverse("login"))


@pytest.mark.django_db
def test_the_list_the_audit_log_and_notifications_link_to_the_page(client, reviewer, staff_admin, item):
    reviews.decide(item.pk, actor=Principal(user=reviewer), decision="approve")
    inbox = as_user(client, reviewer).get(reverse("reviews:inbox")).content.decode()
    assert f'<a href="{page_of(item)}">#{item.pk}</a>' in inbox  # recent decisions

    client.force_login(staff_admin)
    audit = client.get(reverse("admin:governance_auditevent_changelist"), {"target_type": "governance.reviewitem"})
    assert f'<a href="{page_of(item)}">{item.pk}</a>' in audit.content.decode()
