"""The Content-Security-Policy in a real browser: every main page, the admin and the API docs load
without one violation (chromium reports each refused inline script or style on the console), and
htmx still works under it: a search swaps the contract table, a decision updates its inbox row."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.test_inbox_browser import log_in, row_of
from tests.e2e.test_subjects_browser import import_alice
from tests.factories.governance import UserFactory
from tests.governance.contracts.test_pages import ANSWER, INTENT, RANKING, imported
from tests.governance.reviews.test_inbox import waiting_for_validation
from tests.support.manifests import load_seed_manifests

PAGES = (
    "/inbox/",
    "/agents/",
    "/agents/agent.seo.vlevel/",
    "/agents/jobs/",
    "/sessions/",
    "/memory/",
    "/memory/learnings/",
    "/memory/subjects/",
    "/memory/subjects/alice/",
    "/contracts/",
    f"/contracts/{RANKING}/",
    "/health/",
    "/admin/",
    "/admin/axes/accessattempt/",
    "/admin/django_celery_beat/periodictask/add/",
    "/api/v1/docs",
)


def _watch_violations(page: Any) -> list[str]:
    """Chromium logs every blocked resource or inline code as "... Content Security Policy ..."."""
    violations: list[str] = []
    page.on("console", lambda message: "Content Security Policy" in message.text and violations.append(message.text))
    page.on("pageerror", lambda error: violations.append(f"page error: {error}"))
    return violations


@pytest.mark.django_db(transaction=True)
def test_the_main_pages_admin_and_api_docs_load_without_a_csp_violation(page, vlevel_api):
    load_seed_manifests()
    import_alice()
    imported(RANKING, INTENT, ANSWER)
    waiting_for_validation(vlevel_api, "Snapshot the home page")
    UserFactory(username="root", is_staff=True, is_superuser=True)
    violations = _watch_violations(page)

    log_in(page, "root")
    for path in PAGES:
        response = page.goto(path)
        assert response.status == 200, path
        assert "default-src 'self'" in response.headers["content-security-policy"], path
        page.wait_for_load_state("networkidle")
        assert page.locator("head style").count() == 0 or path.startswith(("/admin/", "/api/")), path

    assert violations == []


@pytest.mark.django_db(transaction=True)
def test_htmx_still_swaps_and_posts_under_the_policy(page, vlevel_api):
    from playwright.sync_api import expect

    imported(RANKING, INTENT, ANSWER)
    _, item = waiting_for_validation(vlevel_api, "Snapshot the home page")
    UserFactory(username="rita", roles=["Reviewer", "Viewer"])
    violations = _watch_violations(page)

    log_in(page, "rita")
    row = row_of(page, item.pk)
    row.get_by_role("button", name="Details").click()  # the opening script runs under the policy too
    row.get_by_role("button", name="Approve", exact=True).click()
    expect(row.locator(".outcome")).to_contain_text("Approved by rita at ")

    page.get_by_role("link", name="Contracts", exact=True).click()
    expect(page.locator("#contract-table")).to_contain_text("3 contracts")
    page.get_by_label("Search").fill("ranking")
    expect(page.locator("#contract-table")).to_contain_text("1 contract")

    assert violations == []
