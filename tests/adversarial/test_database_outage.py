"""A database outage (a killed postmaster, a failover) as callers of every door see it: a 503 that
says so and when to come back, never Django's 500 page. The API's own answer is in
tests/governance/test_api_robustness.py; here are the doors outside it."""

from __future__ import annotations

from html import unescape

import pytest
from django.test import Client

from tests.support.keys import issue_key

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}},
}


@pytest.fixture
def quiet_client() -> Client:
    """A client that gets the answer a browser would, instead of the view's exception re-raised."""
    return Client(raise_request_exception=False)


@pytest.fixture
def agent_key(db, agent) -> str:
    return issue_key(agent=agent)


def test_mcp_during_an_outage_is_a_503_problem_with_retry_after(quiet_client, agent_key, database_down):
    response = quiet_client.post(
        "/mcp",
        INITIALIZE,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {agent_key}",
        HTTP_ACCEPT="application/json, text/event-stream",
    )

    assert response.status_code == 503
    assert response["Content-Type"].startswith("application/problem+json")
    assert response.json()["status"] == 503
    assert int(response["Retry-After"]) > 0


@pytest.mark.parametrize("path", ["/inbox/", "/agents/", "/admin/"])
def test_a_signed_in_page_during_an_outage_says_the_database_is_down(
    quiet_client, reviewer, path, database_down_after_login
):
    response = quiet_client.get(path)

    assert response.status_code == 503
    assert int(response["Retry-After"]) > 0
    html = unescape(response.content.decode())
    assert "<h1>The database is unavailable</h1>" in html
    assert '<link rel="stylesheet" href="/static/css/app.css">' in html


@pytest.fixture
def database_down_after_login(quiet_client, reviewer, request):
    """Signed in while the database answers; then it goes away."""
    reviewer.is_staff = True
    reviewer.save()
    quiet_client.force_login(reviewer)
    request.getfixturevalue("database_down")


def test_any_other_failure_is_still_the_500_page(quiet_client, db, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("a bug, not an outage")

    monkeypatch.setattr("django.contrib.auth.views.LoginView.get", broken)

    response = quiet_client.get("/accounts/login/")

    assert response.status_code == 500
    assert "Something went wrong" in response.content.decode()
