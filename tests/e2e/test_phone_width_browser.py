"""Phone width (issue 17.2): at 390 px every link of the top bar stays on screen and no product
page is wider than the viewport; wide tables scroll inside their own box instead of the page.

The pages are the ones the top bar links to, plus the detail pages with the widest tables or the
longest unbroken values (a job's ids and escalation keys, a learning's hashes and tags, a
session's ids), each filled with the seed agents, a subject, imported contracts, a job, a learning
and a session waiting for review so that the tables have rows to widen them."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.agents.test_jobs import envelope
from tests.e2e.test_inbox_browser import log_in
from tests.e2e.test_subjects_browser import import_alice
from tests.factories.governance import UserFactory
from tests.factories.memory import LearningFactory
from tests.governance.contracts.test_pages import ANSWER, INTENT, RANKING, imported
from tests.governance.reviews.test_inbox import waiting_for_validation
from tests.support.manifests import load_seed_manifests

PHONE = {"width": 390, "height": 844}
DETAIL_PAGES = ("/agents/agent.seo.vlevel/", "/memory/subjects/alice/", f"/contracts/{RANKING}/")
BAR_LINKS = ".topbar a, .topbar button"


def off_screen(page: Any) -> list[str]:
    """The top bar's links and buttons whose box is not wholly inside the viewport."""
    missing = []
    for link in page.locator(BAR_LINKS).all():
        box = link.bounding_box()
        inside = box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
        if not inside or not link.is_visible():
            missing.append(link.inner_text())
    return missing


@pytest.mark.django_db(transaction=True)
def test_every_page_fits_a_phone_and_keeps_its_navigation_on_screen(page, vlevel_api):
    from playwright.sync_api import expect

    load_seed_manifests()
    import_alice()
    imported(RANKING, INTENT, ANSWER)
    session_id, _ = waiting_for_validation(vlevel_api, "Snapshot the home page")
    job_id = vlevel_api.post("/jobs", envelope()).json()["jobId"]
    learning = LearningFactory.create(
        tags=["content", "crawl", "facets", "seo", "canonicalisation-of-faceted-navigation-urls"],
        text="Canonicalise faceted URLs " + "x" * 120,
    )
    details = (f"/agents/jobs/{job_id}/", f"/memory/learnings/{learning.pk}/", f"/sessions/{session_id}/")
    UserFactory(username="root", is_staff=True, is_superuser=True)
    page.set_viewport_size(PHONE)
    log_in(page, "root")
    expect(page.locator(".health-indicator")).not_to_have_class(re.compile("health-pending"))  # loaded under the CSP
    nav = [link.get_attribute("href") for link in page.locator(".mainnav a").all()]
    assert {"/agents/jobs/", "/memory/subjects/", "/memory/learnings/", "/health/"} <= set(nav) | {
        page.locator(".health-indicator").get_attribute("href")
    }

    widths = {}
    for path in [*nav, "/health/", *DETAIL_PAGES, *details, "/no-such-page/"]:
        response = page.goto(path)
        assert response.status == (404 if path == "/no-such-page/" else 200), path
        widths[path] = page.evaluate("document.documentElement.scrollWidth")
        assert off_screen(page) == [], path

    assert {path: width for path, width in widths.items() if width > PHONE["width"]} == {}
