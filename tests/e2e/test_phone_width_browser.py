"""No page reachable from the navigation is wider than the screen, at 390 px (a phone) nor at
1440 px, and the top bar keeps every link on a phone's screen (issue 17.2, issue 37 point 8).

The pages are found, not listed, so that a page added later is measured without anyone thinking
of it. Signed in as an Admin who may also open the admin site, the crawl starts at the home page
and opens every link of the top bar and of each section's own navigation, then from each page it
opens one link to every kind of page not opened yet (the fleet to an agent, an agent to its
manifest, the jobs to a job, the memory to a learning, a subject to a fact's form, the gateway to
an agent's calls, the fleet report to an agent's contracts...). A kind is a URL name; of a page's
links to one kind the crawl follows the longest address, whose id is the likeliest to widen its
page. A Reviewer reads what an Admin reads (the roles differ in writes: governance/kernel/roles.py)
with fewer columns (no fact editing) and no admin site, so the Admin's crawl covers the Reviewer's.

The data is the demo fleet (`load_demo`) and, on top of it, values at their longest where the
crawl meets them first: an agent id of 82 characters, a job's URLs and idempotency key, a session
named after a URL with the tool call it asks for, tags and a learning's text without a space, a
subject key of 100 characters, an upstream server with a long name and address, a contract check
with long values. Each page is measured at both widths; one wider than the screen is reported with
its widest element as a selector, so that the failure says what to fix.
"""

from __future__ import annotations

import json
from io import StringIO
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import Resolver404, resolve, reverse

from agents.registry import load_manifest
from gateway.models import GatewayCall
from governance.contracts import services as contracts
from governance.kernel.principals import SYSTEM, Principal
from memory.subjects import documents as subject_documents
from memory.subjects import services as subjects
from tests.e2e.test_inbox_browser import log_in
from tests.e2e.test_subjects_browser import ALICE
from tests.factories.gateway import GatewayCallFactory, UpstreamServerFactory
from tests.factories.governance import UserFactory
from tests.factories.memory import LearningFactory, ReuseScoreFactory
from tests.governance.contracts.test_pages import RANKING
from tests.governance.reviews.test_inbox import send, start_chat
from tests.sessions.test_session_flow import ai
from tests.support.api import Api
from tests.support.jobs import finish_job, submit_job
from tests.support.keys import issue_key
from tests.support.manifests import manifest_text
from tests.support.processes import free_port

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1440, "height": 900}
NAVIGATION = ".topbar a[href], .subnav a[href]"
BAR_LINKS = ".topbar a, .topbar button"
# URL namespaces the crawl neither measures nor goes into, with the reason.
NOT_CRAWLED = {"reviews": "the inbox and its item pages are covered by tests/e2e/test_inbox_*"}
# The admin site is Django's own pages and responsive style sheet: the pages of it ours link to
# (its index from the top bar, a list from the memory page) are measured, the crawl goes no further.
ADMIN = "admin"

LONG_AGENT = "agent.seo.canonicalisation_of_faceted_navigation_urls_for_multilingual_storefronts"
LONG_URL = (
    "https://shop.example.com/catalogue/automotive/brake-systems/front-axle/ceramic-brake-pads-low-dust"
    "?utm_source=newsletter&utm_medium=email&utm_campaign=spring-clearance-2026&variant=4f1c2a9e7d3b"
)
LONG_TAG = "canonicalisation-of-faceted-navigation-urls-across-multilingual-storefronts"
LONG_SUBJECT = "customer_" + "0123456789abcdef" * 5 + "_eu_west_1_"
LONG_SERVER = "search-console-and-analytics-bridge-eu-west-1-prod"
LONG_TOOL = f"mcp__{LONG_SERVER}__query_search_analytics_by_page_and_device"

# The page's width and the element reaching furthest right that no scrolling box clips (of equals,
# the outermost: the one whose width to fix), named by a selector of its last ancestors. An empty
# box does not widen the page (Chromium leaves it out of the scrollable area), so it is skipped.
WIDEST = """() => {
  const clipped = (element) => {
    for (let parent = element.parentElement; parent && parent !== document.body; parent = parent.parentElement)
      if (getComputedStyle(parent).overflowX !== 'visible') return true;
    return false;
  };
  const name = (element) => element.tagName.toLowerCase() + (element.id ? '#' + element.id : '')
    + [...element.classList].map((c) => '.' + c).join('');
  const selector = (element) => {
    const parts = [];
    for (let at = element; at && at !== document.body && parts.length < 5; at = at.parentElement) {
      parts.unshift(name(at));
      if (at.id) break;
    }
    return parts.join(' > ');
  };
  const depth = (element) => { let n = 0; for (let at = element; at; at = at.parentElement) n++; return n; };
  let widest = null;
  for (const element of document.body.querySelectorAll('*')) {
    const {right, width, height} = element.getBoundingClientRect();
    if (right <= window.innerWidth + 0.5 || !width || !height || clipped(element)) continue;
    const further = !widest || right > widest.right + 0.5;
    if (further || (Math.abs(right - widest.right) <= 0.5 && depth(element) < widest.depth))
      widest = {element, right, depth: depth(element)};
  }
  return {
    width: document.scrollingElement.scrollWidth,
    screen: window.innerWidth,
    widest: widest && `${selector(widest.element)} (right edge at ${Math.round(widest.right)} px)`,
  };
}"""


def wide_values(client: Client) -> set[str]:
    """Values at their longest, on top of the demo fleet, each where the crawl meets it first (the
    newest job and session, the most reused learning, the longest agent id and subject key).
    Returns the addresses of their pages."""
    text = manifest_text("agent.seo.vlevel").replace("agent.seo.vlevel", LONG_AGENT)
    agent = load_manifest(text, actor=SYSTEM)[0].agent
    urls = [f"{LONG_URL}&page={n}" for n in range(3)]
    job = submit_job(
        agent, {"urls": urls}, scope={"entityType": "page", "entityIds": urls}, key=f"nightly:{LONG_AGENT}:{LONG_TAG}"
    )
    scores = [{"url": url, "level": "V2"} for url in urls]
    finish_job(job, {"success": True, "data": {"scores": scores}, "confidence": 0.9, "nextAction": "complete"})

    api = Api(client, issue_key(agent=agent))
    session_id = start_chat(api, f"Audit {LONG_URL}")
    send(api, session_id, {"type": "UserMessageSent", "payload": {"text": f"snapshot {LONG_URL}"}})
    snapshot = {"type": "mcp__chrome-devtools__take_snapshot", "params": {"url": LONG_URL, "filePath": LONG_TAG}}
    send(api, session_id, ai(preText=f"I will take a snapshot of {LONG_URL}.", actionCommands=[snapshot]))

    tags = ["seo", LONG_TAG, f"{LONG_TAG}-v2"]
    learning = LearningFactory.create(tags=tags, text=f"Canonicalise {LONG_URL} " + LONG_TAG * 3, story=LONG_TAG)
    ReuseScoreFactory.create(story=LONG_TAG, tags_hash=learning.tags_hash, nb_injections=10_000)

    documents = {
        name: json.loads((ALICE / f"{name}.json").read_text(encoding="utf-8")) for name in subject_documents.DOCUMENTS
    }
    documents["facts"]["preferences"][0] |= {"item": LONG_URL, "context": LONG_TAG}
    documents["facts"]["events"][0]["related_topics"].append(LONG_TAG)
    documents["conversations"]["conversations"][0]["topics"].append(LONG_TAG)
    subjects.import_documents(LONG_SUBJECT, documents, actor=SYSTEM)

    server = UpstreamServerFactory.create(name=LONG_SERVER, url=f"http://127.0.0.1:{free_port()}/mcp/{LONG_TAG}")
    for outcome in (GatewayCall.Outcome.OK, GatewayCall.Outcome.UPSTREAM_FAILED):
        GatewayCallFactory.create(agent=agent, server=server, tool_id=LONG_TOOL, outcome=outcome, error_class=LONG_TAG)

    bad_ranking = {"rankings": [{"id": LONG_TAG, "score": LONG_URL}]}
    contracts.validate_output(Principal(agent=agent), RANKING, output=bad_ranking)
    return {
        reverse("agents:agent-detail", args=[LONG_AGENT]),
        reverse("agents:job-detail", args=[job.pk]),
        reverse("sessions:session-detail", args=[session_id]),
        reverse("memory:learning-detail", args=[learning.pk]),
        reverse("memory:subject-detail", args=[LONG_SUBJECT]),
        reverse("gateway:agent", args=[LONG_AGENT]),
        reverse("contracts:contract-agent", args=[LONG_AGENT]),
    }


def kind_of(path: str) -> str | None:
    """The URL name of a path of ours (None for a path no view answers)."""
    try:
        return resolve(urlsplit(path).path).view_name
    except Resolver404:
        return None


def hrefs(page: Any, selector: str) -> list[str]:
    return page.eval_on_selector_all(selector, "links => links.map((link) => link.getAttribute('href'))")


def off_screen(page: Any) -> list[str]:
    """The top bar's links and buttons whose box is not wholly inside the viewport."""
    missing = []
    for link in page.locator(BAR_LINKS).all():
        box = link.bounding_box()
        inside = box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
        if not inside or not link.is_visible():
            missing.append(link.inner_text())
    return missing


class Crawl:
    """The pages reachable from the navigation, one of each kind, each measured at both widths."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.origin = urlsplit(page.url).netloc
        self.queue: list[str] = []  # addresses, in the order found
        self.queued: set[str] = set()  # their kinds
        self.opened: dict[str, str] = {}  # address -> kind
        self.too_wide: list[str] = []
        self.bar_off_screen: dict[str, list[str]] = {}

    def run(self) -> None:
        self.page.goto("/")
        self.find(hrefs(self.page, NAVIGATION))
        while self.queue:
            self.visit(self.queue.pop(0))

    def find(self, links: list[str]) -> None:
        """Queue one link to each kind not queued yet: of this page's, the longest address."""
        found: dict[str, str] = {}
        for href in links:
            parts = urlsplit(href)
            if parts.netloc not in ("", self.origin) or not parts.path.startswith("/"):
                continue  # another site, an anchor or a query on this page
            kind = kind_of(parts.path)
            if kind is None or kind in self.queued or kind.partition(":")[0] in NOT_CRAWLED:
                continue
            address = parts.path + (f"?{parts.query}" if parts.query else "")
            if len(address) > len(found.get(kind, "")):
                found[kind] = address
        self.queue.extend(found.values())
        self.queued.update(found)

    def visit(self, address: str) -> None:
        answer = self.page.request.get(address)
        assert answer.ok, f"{address} answers {answer.status}"
        if not answer.headers.get("content-type", "").startswith("text/html"):
            return  # a CSV, Markdown or YAML download
        kind = kind_of(urlsplit(answer.url).path) or ""
        if kind.partition(":")[0] in NOT_CRAWLED:
            return  # the home page is the inbox
        self.page.goto(address)
        self.opened[address] = kind
        self.measure(address)
        if kind.partition(":")[0] != ADMIN:
            self.find(hrefs(self.page, NAVIGATION))
            self.find(hrefs(self.page, "main a[href]"))

    def measure(self, address: str) -> None:
        """At both widths, without loading the page again: the style sheet's media queries apply."""
        from playwright.sync_api import expect

        expect(self.page.locator(".health-pending")).to_have_count(0)  # the top bar's, filled in by htmx
        for viewport in (PHONE, DESKTOP):
            self.page.set_viewport_size(viewport)
            found = self.page.evaluate(WIDEST)
            if found["width"] > found["screen"]:
                self.too_wide.append(
                    f"{address} at {found['screen']} px is {found['width']} px wide, widest: {found['widest']}"
                )
        self.page.set_viewport_size(PHONE)
        if missing := off_screen(self.page):
            self.bar_off_screen[address] = missing


@pytest.mark.django_db(transaction=True)
def test_no_page_reachable_from_the_navigation_is_wider_than_a_phone_or_a_desktop(page):
    call_command("load_demo", stdout=StringIO())  # into the empty database, before any account
    longest_values = wide_values(Client())
    UserFactory(username="alice", roles=["Admin"], is_staff=True)
    page.set_viewport_size(PHONE)
    page.goto("/accounts/login/")
    crawl = Crawl(page)
    crawl.measure("/accounts/login/")
    log_in(page, "alice")

    crawl.run()
    page.goto("/no-such-page/")
    crawl.measure("/no-such-page/")

    assert longest_values - set(crawl.opened) == set(), "the crawl no longer meets the longest values first"
    # Pages behind a section's own navigation, two links deep, and the admin site's index.
    assert {"gateway:tools", "memory:subject-fact-edit", "admin:index"} <= set(crawl.opened.values())
    assert not crawl.too_wide, "Wider than the screen:\n" + "\n".join(crawl.too_wide)
    assert crawl.bar_off_screen == {}, "top bar links off a phone's screen"
