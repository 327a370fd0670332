"""Operator pages: login-protected, one layout, htmx with CSRF on every request."""

from __future__ import annotations

import pytest
from django.urls import reverse

NAV = ["reviews:inbox", "agents:agent-list", "sessions:session-list", "memory:memory-overview", "contracts:contracts"]


@pytest.mark.django_db
@pytest.mark.parametrize("name", NAV)
def test_pages_require_login(client, name):
    response = client.get(reverse(name))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.mark.django_db
@pytest.mark.parametrize("name", NAV)
def test_every_navigation_link_answers_for_an_operator(client, viewer, name):
    client.force_login(viewer)
    response = client.get(reverse(name))

    assert response.status_code == 200
    html = response.content.decode()
    for link in NAV:
        assert f'href="{reverse(link)}"' in html
    assert 'aria-current="page"' in html


@pytest.mark.django_db
def test_the_layout_sends_the_csrf_token_with_every_htmx_request(client, viewer):
    client.force_login(viewer)
    response = client.get(reverse("reviews:inbox"))

    html = response.content.decode()
    token = response.context["csrf_token"]
    assert f'hx-headers=\'{{"X-CSRFToken": "{token}"}}\'' in html
    assert "htmx" in html
    assert "<script" in html


@pytest.mark.django_db
def test_login_then_land_on_the_inbox(client, reviewer):
    response = client.post(
        reverse("login"), {"username": "rita", "password": "correct horse battery staple"}, follow=True
    )
    assert response.redirect_chain[-1][0] == reverse("reviews:inbox")
    assert b"Reviewer inbox" in response.content


@pytest.mark.django_db
def test_a_wrong_password_is_refused(client, reviewer):
    response = client.post(reverse("login"), {"username": "rita", "password": "nope"})
    assert response.status_code == 200
    assert b"didn't match" in response.content


@pytest.mark.django_db
def test_the_agents_page_lists_the_fleet(client, viewer, agent, other_agent):
    client.force_login(viewer)
    html = client.get(reverse("agents:agent-list")).content.decode()
    assert agent.agent_id in html
    assert other_agent.agent_id in html


@pytest.mark.django_db
def test_the_admin_is_titled_for_the_product(admin_client):
    assert b"Agent governance control plane" in admin_client.get("/admin/").content


@pytest.mark.django_db
def test_static_files_are_served(client):
    response = client.get("/static/css/app.css")
    assert response.status_code == 200
