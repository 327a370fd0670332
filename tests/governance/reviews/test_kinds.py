"""The registry of review kinds (governance.reviews.kinds): what an app declares is what the inbox
shows, and a code no app declares still shows, approves and rejects."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents import tools
from governance.kernel.principals import SYSTEM
from governance.reviews import kinds
from governance.reviews import services as reviews


def test_a_second_declaration_of_a_taken_code_is_refused_at_start() -> None:
    with pytest.raises(ValueError, match="'tool_approval' is declared twice"):
        kinds.register(kinds.ReviewKind(code=tools.REVIEW_KIND, label="Something else"))
    assert kinds.get(tools.REVIEW_KIND) is tools.REVIEW


def test_declaring_the_same_kind_again_changes_nothing() -> None:
    kinds.register(tools.REVIEW)
    assert [kind.code for kind in kinds.all()].count(tools.REVIEW_KIND) == 1


@pytest.mark.django_db
def test_an_item_of_an_undeclared_kind_shows_as_its_code_with_approve_and_reject(client, reviewer) -> None:
    item = reviews.open_item(actor=SYSTEM, kind="vendor.sign_off", title="Sign off?", payload={"contract": "c-1"})
    client.force_login(reviewer)
    html = client.get(reverse("reviews:inbox")).content.decode()

    assert '<span class="kind-badge">Vendor sign off</span>' in html
    assert "Request details" in html  # the generic row: the whole payload
    assert "c-1" in html
    url = reverse("reviews:inbox-decide", args=[item.pk])
    assert html.count(f'hx-post="{url}"') == 4  # on its line, and under its comment
    assert 'value="approve"' in html
    assert 'value="reject"' in html
    assert f'name="items" value="{item.pk}:' not in html  # decided one by one, never in bulk
