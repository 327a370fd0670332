"""The inbox stays live by asking: every few seconds the pending list sends the version it shows,
and gets 204 when nothing came or was decided (two index-only reads), or what changed with the
new version; for those who may read the inbox only."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from governance.kernel.principals import Principal
from governance.reviews import services as reviews
from governance.reviews.views import POLL_SECONDS
from tests.governance.reviews.test_inbox import as_user, waiting_for_validation
from tests.support.keys import issue_key

POLL = reverse("reviews:inbox-pending")


def inbox_version(client: Client) -> str:
    html = client.get(reverse("reviews:inbox")).content.decode()
    found = re.search(r'<input type="hidden" id="inbox-version" name="version" value="([0-9a-f]+)">', html)
    assert found, "the inbox shows no version"
    return found.group(1)


def poll(client: Client, version: str, *rows: int) -> Any:
    return client.get(POLL, {"version": version, "row": [str(row) for row in rows]}, headers={"HX-Request": "true"})


@pytest.mark.django_db
def test_an_unchanged_inbox_answers_204_and_a_new_request_brings_its_row_and_version(
    client, reviewer, vlevel_api, django_assert_max_num_queries
):
    as_user(client, reviewer)
    version = inbox_version(client)
    with django_assert_max_num_queries(6):  # the session, the user, two index-only reads
        unchanged = poll(client, version)
    assert (unchanged.status_code, unchanged.content) == (204, b"")

    _, item = waiting_for_validation(vlevel_api)
    changed = poll(client, version)
    html = changed.content.decode()

    assert changed.status_code == 200
    assert f'data-item-id="{item.pk}"' in html
    new_version = re.search(r'id="inbox-version" name="version" value="([0-9a-f]+)" hx-swap-oob="true"', html)
    assert new_version
    assert new_version.group(1) != version
    assert poll(client, new_version.group(1), item.pk).status_code == 204


@pytest.mark.django_db
def test_a_decision_made_elsewhere_changes_the_version(client, reviewer, admin_operator, vlevel_api):
    _, item = waiting_for_validation(vlevel_api)
    as_user(client, reviewer)
    version = inbox_version(client)

    reviews.decide(item.pk, actor=Principal(user=admin_operator), decision="approve")
    html = poll(client, version, item.pk).content.decode()

    assert "Approved by alice at " in html
    assert '<span id="matching-count" hx-swap-oob="true">0</span>' in html


@pytest.mark.django_db
def test_the_inbox_polls_with_its_version(client, viewer):
    html = as_user(client, viewer).get(reverse("reviews:inbox")).content.decode()

    assert f'hx-trigger="every {POLL_SECONDS}s, inbox-decided from:body delay:300ms"' in html
    assert "hx-include=\"#pending-items input[name='row'], #inbox-version\"" in html
    assert "sse-connect" not in html


@pytest.mark.django_db
def test_the_poll_is_for_inbox_readers_only(client, outsider, vlevel):
    anonymous = Client().get(POLL)
    with_key = Client().get(POLL, HTTP_AUTHORIZATION=f"Bearer {issue_key(agent=vlevel)}")
    refused = as_user(client, outsider).get(POLL)

    assert (anonymous.status_code, with_key.status_code, refused.status_code) == (302, 302, 403)
    assert anonymous["Location"].startswith(reverse("login"))
