"""403, 404 and 500 in the product's layout (issue 17.3); the 500 page renders with no request,
no user and no database, as Django's handler500 calls it."""

from __future__ import annotations

from html import unescape

import pytest
from django.test import RequestFactory
from django.views.defaults import server_error

from tests.factories.governance import UserFactory


@pytest.mark.django_db
def test_an_unknown_address_is_a_404_page_with_the_navigation(client, viewer):
    client.force_login(viewer)

    response = client.get("/no-such-page/")

    assert response.status_code == 404
    html = unescape(response.content.decode())
    assert "<h1>Not found</h1>" in html
    assert '<nav class="mainnav">' in html
    assert '<link rel="stylesheet" href="/static/css/app.css">' in html


@pytest.mark.django_db
def test_a_page_the_account_may_not_see_is_a_403_page_with_the_navigation(client):
    client.force_login(UserFactory(username="nobody", roles=[]))

    response = client.get("/memory/learnings/")

    assert response.status_code == 403
    html = unescape(response.content.decode())
    assert "<h1>Not allowed</h1>" in html
    assert '<nav class="mainnav">' in html


def test_the_500_page_renders_without_a_request_context_or_the_database():
    """No django_db mark: pytest-django fails the test on any database access."""
    response = server_error(RequestFactory().get("/agents/"))

    assert response.status_code == 500
    html = unescape(response.content.decode())
    assert "<h1>Something went wrong</h1>" in html
    assert '<link rel="stylesheet" href="/static/css/app.css">' in html
    assert "mainnav" not in html  # no user, no navigation
