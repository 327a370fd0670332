"""The reviewer inbox with 200 pending items of mixed kinds, in Chromium and over HTTP (issue 37).

What issue 37's "Done means" asks for, before and after, against the web role started as
``manage.py serve --role web`` starts it.

The inbox is seeded by ``tests/support/volume.py``, the mix the browser tests drive (100 tool-call
approvals asked through ``agents.tools.record_call``, 56 action approvals, 8 questions, 28 learning
promotions, 8 escalations, from a dozen agents). Each seed is a new dozen agents: an agent asking
again with arguments a reviewer already approved or rejected is answered from that decision
(``agents.tools``), so the first seed's agents could not ask again. Before each seed, items a
previous (or crashed) run left pending are closed through the system's own expiry
(``reviews.expire``); no row is ever deleted.

Phases:

1. ``page``: signed in through the login form, the inbox at 1440 x 900 (the document's height,
   the rows wholly inside the first screen) and at 390 x 844 (height, whether the first item is
   wholly inside the first screen, the document's width against the window's). Baseline: the
   figures issue 37 measured on the inbox before it (named as such: not measured here).
2. ``keyboard``: all 200 decided from the keyboard: ``j`` to the first item, then ``a`` on an item
   with an approve button and ``r`` on the others (a question is declined), each time waiting
   until the row shows its decision (an ``a`` on a line that does not show all it approves opens
   the item instead: a second ``a`` approves); the page moves the focus on by itself and brings
   up the items of the next pages. When no pending item has the focus (the page had none to move to),
   the next one the list brings up is waited for and ``j`` pressed.
3. ``bulk``: a new 200; from the page load to all 200 decided with "Approve all N matching" (the
   confirmation accepted), then the questions: kind filter, "All on page", an answer, "Answer
   selected". Both are checked in the database.
4. ``live``: a new 200; 20 reviewers (each its own account, signed in through the login form with
   its CSRF token) page quickly for ``duration`` seconds: ``GET /inbox/?page=k`` every 0.5 s, k
   cycling over the pages, and every 3 s the poll the page makes (``/inbox/pending/`` with the
   page's version and rows, ``HX-Request``), while a writer decides one item every 2 s through the
   services (so versions change and polls answer 200). Baseline ("event streams"): a new 200,
   the same 20 reviewers paging, each page load opening an event stream as the inbox did until
   issue 37 (``governance.kernel.live``, at most ``LIVE_MAX_STREAMS`` per process; the inbox's
   own stream is gone, so the session page's, the same module and cap) and holding it in a thread
   until the next page load, which closes it (a stream not answered yet is abandoned, as a
   browser does). That inbox's 30 s fallback poll never fires on a page shown 0.5 s.

Run: ``python -m bench inbox`` (about 3 minutes; ``--duration`` sets phase 4's seconds per arm).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import math
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import (
    BASE_DIR,
    SETTINGS,
    div,
    machine,
    package_version,
    percentile,
    prepare_database,
    publish,
    run_threads,
    until_interrupted,
)
from bench.jobs import _die_with_parent, free_port, stop_embedded_db_if_ours, stop_server, wait_healthy

DB_NAME = "governance_bench_inbox"
# Celery work a decision hands off goes to an in-process queue, never to a dev worker's Redis
# (which would run it against another database). The web role as serve starts it: 2 x 8 threads.
ENVIRONMENT = {"CELERY_BROKER_URL": "memory://localhost/", "WEB_CONCURRENCY": "2", "WEB_THREADS": "8"}
PASSWORD = "bench inbox reviewer"  # the bench's reviewers, in its own database only
BROWSER_REVIEWER = "bench-inbox-rita"
WRITER = "bench-inbox-writer"
CLIENT_NAME = "bench-inbox-client-{:02d}"
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
STEP_TIMEOUT_MS = 30_000  # a decision shown, or the next item brought up (the list polls every 3 s)
BULK_TIMEOUT_MS = 180_000  # 200 decisions in one request
PAGE_SECONDS = 0.5  # a reviewer paging quickly
WRITER_SECONDS = 2.0
HTTP_TIMEOUT = 60.0
SAMPLES = 5
# Issue 37's figures for the inbox before it, as the issue reports them (measured there, not here).
ISSUE_BEFORE = {
    "height_1440_px": 7909,
    "height_390_px": 12835,
    "items_per_screen_1440": 3,
    "first_item_in_first_screen_390": False,
    "live_update_failures_paging": 23,
}

# What a screen shows of the list: rows wholly inside the window, the first row, the widths.
LAYOUT_JS = """() => {
  const rows = Array.from(document.querySelectorAll('#pending-items .review-item'));
  const h = window.innerHeight;
  const inside = rows.filter(r => { const b = r.getBoundingClientRect(); return b.top >= 0 && b.bottom <= h; });
  const first = rows.length ? rows[0].getBoundingClientRect() : null;
  return {
    height_px: document.scrollingElement.scrollHeight,
    pending_section_bottom_px: Math.round(document.querySelector('.pending-section').getBoundingClientRect().bottom
      + window.scrollY),
    window: [window.innerWidth, h],
    scroll_width_px: document.scrollingElement.scrollWidth,
    rows: rows.length,
    rows_in_first_screen: inside.length,
    first_row_bottom_px: first ? Math.round(first.bottom) : null,
    first_in_first_screen: !!first && first.top >= 0 && first.bottom <= h,
    recent_decisions_shown: document.querySelectorAll('#recent-decisions tbody tr').length,
  };
}"""
# The focused pending item (with whether it has an approve button); else, once htmx is done
# (no request, swap or settle under way: the page moves the focus itself when a swap settles),
# {j: true} if the list shows a pending item that nothing focused; else null (keep waiting).
NEXT_JS = """() => {
  const active = document.activeElement;
  const row = active && active.closest ? active.closest('.review-item') : null;
  if (row && row.matches('.review-pending') && !row.classList.contains('htmx-settling')) {
    return {id: row.dataset.itemId, approve: !!row.querySelector('button.decision.approve')};
  }
  if (document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')) return null;
  return document.querySelector('#pending-items .review-item.review-pending') ? {j: true} : null;
}"""
# After a key on item ``id``: "decided" once its row shows a decision; "opened" when it is still
# pending with its body shown (an approval from a line that does not show everything opens it).
OUTCOME_JS = """id => { const row = document.getElementById('review-item-' + id);
  if (!row) return null;
  if (!row.matches('.review-pending')) return 'decided';
  const body = row.querySelector('.review-body');
  return body && !body.hidden ? 'opened' : null; }"""
DECIDED_JS = f"id => ({OUTCOME_JS})(id) === 'decided'"


# --- Database, people and the inbox ---------------------------------------------------------------


def close_leftovers() -> int:
    """Expire what earlier runs left pending, as the system closes an item at its deadline."""
    from governance.kernel.exceptions import Conflict
    from governance.reviews import services as reviews
    from governance.reviews.models import ReviewItem

    closed = 0
    for item_id in ReviewItem.objects.filter(status=ReviewItem.Status.PENDING).values_list("pk", flat=True):
        with contextlib.suppress(Conflict):  # decided meanwhile
            reviews.expire(item_id, comment="Closed by bench/inbox.py before it seeds the inbox again.")
            closed += 1
    return closed


def seed(tag: str) -> list[int]:
    """200 pending items of mixed kinds from a new dozen agents (``agent.seo.worker_NN_<tag>``),
    in the order they were opened."""
    from tests.support.manifests import manifest_text
    from tests.support.volume import agents_of, mixed_inbox

    close_leftovers()
    manifest = manifest_text("agent.seo.vlevel").replace('"agent.seo.vlevel"', f'"agent.seo.vlevel_{tag}"')
    return [item.pk for item in mixed_inbox(agents_of(manifest))]


def reviewer(username: str) -> Any:
    """A user with the Reviewer role and the bench's password (set when the account is made)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    user, created = get_user_model().objects.get_or_create(username=username)
    if created:
        user.set_password(PASSWORD)
        user.save(update_fields=["password"])
    user.groups.add(Group.objects.get(name="Reviewer"))
    return user


def decisions_of(item_ids: list[int]) -> dict[str, Any]:
    """What became of the seeded items: still pending, and decisions by decision and decider."""
    from governance.reviews.models import ReviewDecision, ReviewItem

    decided = ReviewDecision.objects.filter(item_id__in=item_ids)
    by = Counter(f"{decision} by {who}" for decision, who in decided.values_list("decision", "user__username"))
    pending = ReviewItem.objects.filter(pk__in=item_ids, status=ReviewItem.Status.PENDING).count()
    return {"pending": pending, "decisions": decided.count(), "by": dict(sorted(by.items()))}


def chat_session() -> str:
    """A session to open the baseline's event streams on (any agent's chat; one a run)."""
    from agents.models import Agent
    from governance.kernel.principals import Principal
    from sessions.scheduler import start_chat

    agent = Agent.objects.filter(agent_id__startswith="agent.seo.worker_").latest("pk")
    session = start_chat(agent, actor=Principal(agent=agent), name="bench inbox streams", require_validation=False)
    return str(session.pk)


# --- The server -----------------------------------------------------------------------------------


def start_web(port: int, log: Path) -> subprocess.Popen:
    """The web role's command as ``manage.py serve`` builds it (gthread, ``--workers 2 --threads 8``,
    the plane's gunicorn config, access log on), with ``bench.settings`` on this database."""
    from controlplane.management.commands.serve import role_commands

    command = role_commands("web", host="127.0.0.1", port=port)["web"]
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": SETTINGS, "EMBEDDED_DB_NAME": DB_NAME, "PYTHONUNBUFFERED": "1"}
    with log.open("wb") as out:
        return subprocess.Popen(
            command,
            cwd=BASE_DIR,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )


ACCESS_5XX = re.compile(r'"(\w+) (\S+) HTTP/[\d.]+" (5\d\d) ')
PATH_IDS = re.compile(r"/([0-9a-f-]{32,36}|\d+)/")


def server_log_findings(log: Path) -> dict[str, Any]:
    """What the server's own log says went wrong: 5xx answers by status and route (ids left out),
    and tracebacks."""
    text = log.read_text(encoding="utf-8", errors="replace")
    failed = Counter(
        f"{status} {method} {PATH_IDS.sub('/<id>/', path)}" for method, path, status in ACCESS_5XX.findall(text)
    )
    return {"answers_5xx": dict(failed), "tracebacks": text.count("Traceback")}


# --- In the browser -------------------------------------------------------------------------------


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """Debian's chromium launched as the browser tests launch it (tests/e2e/conftest.py). The
    Django calls between browser phases run outside it: Playwright's loop would refuse them."""
    from playwright.sync_api import sync_playwright

    from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS

    if not CHROMIUM.exists():
        raise RuntimeError(f"{CHROMIUM} is not installed: the browser phases need Debian's chromium")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class BrowserTrouble:
    """Answers >= 400 and script errors a page met: a reviewer would have seen them."""

    failed: list[str] = field(default_factory=list)
    script_errors: list[str] = field(default_factory=list)

    def watch(self, page: Any) -> None:
        page.on(
            "response",
            lambda r: self.failed.append(f"{r.status} {r.request.method} {r.url}") if r.status >= 400 else None,
        )
        page.on("pageerror", lambda error: self.script_errors.append(str(error)))

    def as_dict(self) -> dict[str, Any]:
        return {
            "answers_400_plus": len(self.failed),
            "script_errors": len(self.script_errors),
            "samples": (self.failed + self.script_errors)[:SAMPLES],
        }


def signed_in_page(browser: Any, base: str, viewport: dict[str, int], trouble: BrowserTrouble) -> Any:
    """A new browser context signed in as the bench's reviewer through the login form, on the inbox."""
    context = browser.new_context(base_url=base, viewport=viewport)
    context.set_default_timeout(STEP_TIMEOUT_MS)
    page = context.new_page()
    trouble.watch(page)
    page.goto("/accounts/login/?next=/inbox/")
    page.fill("#id_username", BROWSER_REVIEWER)
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/inbox/")
    return page


def measure_page(page: Any) -> dict[str, Any]:
    desktop = page.evaluate(LAYOUT_JS)
    page.set_viewport_size(PHONE)
    page.reload()
    phone = page.evaluate(LAYOUT_JS)
    page.set_viewport_size(DESKTOP)
    return {"desktop": desktop, "phone": phone}


def decide_with_keys(page: Any, expected: int) -> dict[str, Any]:
    """``expected`` items decided one key at a time; the clock runs from the first ``j``. An
    approval that opens the item instead (its line does not show everything) is followed by the
    second ``a`` that approves it."""
    page.goto("/inbox/")
    keys: Counter[str] = Counter()
    latencies: list[float] = []
    waits_for_next = 0.0
    opened_first = 0
    started = time.perf_counter()
    page.keyboard.press("j")
    keys["j"] += 1
    j_after = [0]  # decisions made when j was needed: the page had no pending item to move to
    stuck = None
    try:
        while len(latencies) < expected:
            looking = time.perf_counter()
            found = wait_for(page, NEXT_JS, None, "a pending item to focus", len(latencies))
            waits_for_next += time.perf_counter() - looking
            if found.get("j"):
                page.keyboard.press("j")
                keys["j"] += 1
                j_after.append(len(latencies))
                continue
            key = "a" if found["approve"] else "r"
            pressed = time.perf_counter()
            page.keyboard.press(key)
            keys[key] += 1
            if wait_for(page, OUTCOME_JS, found["id"], f"item {found['id']} decided", len(latencies)) == "opened":
                opened_first += 1
                page.keyboard.press("a")
                keys["a"] += 1
                wait_for(page, DECIDED_JS, found["id"], f"item {found['id']} decided by the second a", len(latencies))
            latencies.append(time.perf_counter() - pressed)
    except Stuck as exc:  # reported, not hidden: the other phases still run
        stuck = exc.state
    seconds = time.perf_counter() - started
    ordered = sorted(latencies)
    return {
        "decided_on_page": len(latencies),
        "seconds": round(seconds, 2),
        "keys": dict(keys),
        "j_after_decisions": j_after,
        "approvals_that_opened_the_item_first": opened_first,
        "key_to_row_decided_p50_ms": round(percentile(ordered, 50) * 1000, 1),
        "key_to_row_decided_p95_ms": round(percentile(ordered, 95) * 1000, 1),
        "seconds_waiting_for_next_item": round(waits_for_next, 2),
        "stuck": stuck,
    }


class Stuck(Exception):
    """A step of the keyboard phase waited ``STEP_TIMEOUT_MS`` in vain: where the page was."""

    def __init__(self, state: dict[str, Any]) -> None:
        super().__init__(json.dumps(state))
        self.state = state


def wait_for(page: Any, script: str, arg: Any, what: str, decided: int) -> Any:
    """The truthy value of ``script`` on the page, or Stuck with the page's state."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        return page.wait_for_function(script, arg=arg, timeout=STEP_TIMEOUT_MS).json_value()
    except PlaywrightTimeout:
        raise Stuck({"after_decisions": decided, "waiting_for": what, **page_state(page)}) from None


def page_state(page: Any) -> dict[str, Any]:
    """Where the page is when a step waited too long: what has the focus, what is pending."""
    return page.evaluate(
        """() => ({
          focused: document.activeElement ? (document.activeElement.id || document.activeElement.tagName) : null,
          pending_rows: document.querySelectorAll('#pending-items .review-item.review-pending').length,
          rows: document.querySelectorAll('#pending-items .review-item').length,
          matching_count: (document.getElementById('matching-count') || {}).textContent,
        })"""
    )


def decide_in_bulk(page: Any) -> dict[str, Any]:
    """From the page load: "Approve all N matching" (confirmed), then the questions answered together."""
    from playwright.sync_api import expect

    dialogs: list[str] = []

    def confirm(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.accept()

    page.on("dialog", confirm)
    started = time.perf_counter()
    page.goto("/inbox/")
    page.get_by_role("button", name=re.compile(r"^Approve all \d+ matching$")).click()
    expect(page.locator(".messages")).to_contain_text("Approved", timeout=BULK_TIMEOUT_MS)
    approved_at = time.perf_counter()
    approve_messages = page.locator(".messages li").all_inner_texts()
    page.get_by_label("Kind").select_option("session_communication")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**/inbox/?kind=session_communication*")
    page.get_by_label("All on page").check()
    answer = page.get_by_label("Answer for the selected questions").locator("option").first.inner_text()
    page.get_by_label("Answer for the selected questions").select_option(answer)
    page.get_by_role("button", name="Answer selected").click()
    expect(page.locator(".messages")).to_contain_text("Answered", timeout=BULK_TIMEOUT_MS)
    seconds = time.perf_counter() - started
    return {
        "seconds": round(seconds, 2),
        "approve_all_matching_s": round(approved_at - started, 2),
        "questions_s": round(seconds - (approved_at - started), 2),
        "confirmation": dialogs,
        "messages": approve_messages + page.locator(".messages li").all_inner_texts(),
        "answer": answer,
    }


def browser_phases(base: str, items: list[int]) -> dict[str, Any]:
    """Phases 1 and 2 on one seeded inbox (the page is only looked at before it is decided)."""
    trouble = BrowserTrouble()
    with chromium() as browser:
        page = signed_in_page(browser, base, DESKTOP, trouble)
        print("page: the inbox at 1440 x 900 and 390 x 844 ...", flush=True)
        layout = measure_page(page)
        print(f"keyboard: deciding {len(items)} items with j/a/r ...", flush=True)
        keyboard = decide_with_keys(page, len(items))
    return {"page": layout, "keyboard": {**keyboard, "browser": trouble.as_dict()}}


def bulk_phase(base: str) -> dict[str, Any]:
    trouble = BrowserTrouble()
    with chromium() as browser:
        page = signed_in_page(browser, base, DESKTOP, trouble)
        print("bulk: approve all matching, then answer the questions ...", flush=True)
        bulk = decide_in_bulk(page)
    return {**bulk, "browser": trouble.as_dict()}


# --- Twenty reviewers over HTTP -------------------------------------------------------------------


@dataclass
class Tally:
    """What one kind of request got in one arm: outcomes by status (or ``exception``, or
    ``abandoned`` for a stream the reviewer left before it was answered) and latencies."""

    outcomes: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    samples: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answered(self, status: int, seconds: float, body: str = "") -> None:
        with self.lock:
            self.outcomes[str(status)] += 1
            self.latencies.append(seconds)
            if status >= 400 and len(self.samples) < SAMPLES:
                self.samples.append(f"{status}: {body[:200]}")

    def failed(self, outcome: str, detail: str = "") -> None:
        with self.lock:
            self.outcomes[outcome] += 1
            if outcome == "exception" and len(self.samples) < SAMPLES:
                self.samples.append(detail[:300])

    def summary(self) -> dict[str, Any]:
        ordered = sorted(self.latencies)
        errors = sum(n for outcome, n in self.outcomes.items() if outcome == "exception" or _is_error_status(outcome))
        return {
            "requests": sum(self.outcomes.values()),
            "outcomes": dict(sorted(self.outcomes.items())),
            "errors": errors,
            "p50_ms": round(percentile(ordered, 50) * 1000, 1),
            "p95_ms": round(percentile(ordered, 95) * 1000, 1),
            "samples": self.samples,
        }


def _is_error_status(outcome: str) -> bool:
    return outcome.isdigit() and int(outcome) >= 400


ROW = re.compile(r'<input type="hidden" name="row" value="(\d+)">')
VERSION = re.compile(r'id="inbox-version" name="version" value="([^"]*)"')
PAGES = re.compile(r"Page \d+ of (\d+)")
DECIDED_ELSEWHERE = re.compile(r'<article class="review-item review-(?!pending)\w+" id="review-item-(\d+)"')


class Reviewer:
    """One reviewer's browser as the server sees it: a signed-in session, and the inbox page it
    shows (page number, version, pending rows), which its poll sends back."""

    def __init__(self, base: str, username: str) -> None:
        import requests

        self.base, self.username = base, username
        self.http = requests.Session()
        self.page, self.pages, self.version = 0, 1, ""
        self.rows: list[str] = []

    def log_in(self) -> None:
        form = self.http.get(f"{self.base}/accounts/login/?next=/inbox/", timeout=HTTP_TIMEOUT)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
        if token is None:
            raise RuntimeError(f"no CSRF token on the login page ({form.status_code})")
        fields = {"username": self.username, "password": PASSWORD, "csrfmiddlewaretoken": token[1], "next": "/inbox/"}
        done = self.http.post(f"{self.base}/accounts/login/", data=fields, timeout=HTTP_TIMEOUT)
        if done.status_code != 200 or not done.url.endswith("/inbox/"):
            raise RuntimeError(f"{self.username} could not sign in: {done.status_code} at {done.url}")

    def cookie(self) -> str:
        return "; ".join(f"{name}={value}" for name, value in self.http.cookies.items())

    def _get(self, path: str, tally: Tally, **headers: str) -> Any:
        started = time.perf_counter()
        try:
            response = self.http.get(f"{self.base}{path}", headers=headers, timeout=HTTP_TIMEOUT, allow_redirects=False)
        except Exception as exc:  # anything the reviewer's browser would have shown as a failure
            tally.failed("exception", repr(exc))
            return None
        tally.answered(response.status_code, time.perf_counter() - started, response.text)
        return response

    def load_next_page(self, tally: Tally) -> bool:
        """The next page of the cycle; True when it showed."""
        self.page = self.page % self.pages + 1
        response = self._get(f"/inbox/?page={self.page}", tally)
        if response is None or response.status_code != 200:
            return False
        version, pages = VERSION.search(response.text), PAGES.search(response.text)
        self.version = version[1] if version else ""
        self.pages = int(pages[1]) if pages else 1
        self.rows = ROW.findall(response.text)
        return True

    def poll(self, tally: Tally) -> None:
        """The page's poll: 204 when nothing changed; otherwise the new version and the rows it
        appends, while rows decided elsewhere stop counting as shown."""
        query = "&".join([f"page={self.page}", f"version={self.version}", *(f"row={row}" for row in self.rows)])
        response = self._get(f"/inbox/pending/?{query}", tally, **{"HX-Request": "true"})
        if response is None or response.status_code != 200:
            return
        version = VERSION.search(response.text)
        self.version = version[1] if version else self.version
        gone = set(DECIDED_ELSEWHERE.findall(response.text))
        self.rows = [row for row in self.rows if row not in gone] + ROW.findall(response.text)


class HeldStream:
    """An event stream a page opened, held in its own thread as a browser's EventSource is, until
    the reviewer leaves the page (``leave``): an open stream is closed, one not answered yet is
    abandoned."""

    def __init__(self, port: int, path: str, cookie: str, tally: Tally) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=HTTP_TIMEOUT)
        self.left = threading.Event()
        self.thread = threading.Thread(target=self._hold, args=(path, cookie, tally), daemon=True)
        self.thread.start()

    def _hold(self, path: str, cookie: str, tally: Tally) -> None:
        started = time.perf_counter()
        try:
            self.connection.request("GET", path, headers={"Cookie": cookie, "Accept": "text/event-stream"})
            response = self.connection.getresponse()
            if response.status != 200:
                tally.answered(response.status, time.perf_counter() - started, response.read().decode(errors="replace"))
                return
            tally.answered(200, time.perf_counter() - started)
            self.left.wait()
        except (OSError, http.client.HTTPException) as exc:
            tally.failed("abandoned" if self.left.is_set() else "exception", repr(exc))
        finally:
            self.connection.close()

    def leave(self) -> None:
        self.left.set()
        if self.connection.sock is not None:  # a request still waiting for its answer is cut off
            with contextlib.suppress(OSError):
                self.connection.sock.shutdown(socket.SHUT_RDWR)


def page_quickly(
    reviewer: Reviewer, deadline: float, tallies: dict[str, Tally], rng: random.Random, stream: tuple[int, str] | None
) -> None:
    """One reviewer for the arm: a page every ``PAGE_SECONDS`` (at once when the last took longer)
    and, without ``stream``, the page's poll every ``POLL_SECONDS``; with ``stream`` (port, path),
    an event stream opened at each page load and held until the next."""
    from governance.reviews.views import POLL_SECONDS

    next_page = time.monotonic() + rng.uniform(0, PAGE_SECONDS)  # reviewers do not start in step
    next_poll = next_page + rng.uniform(0, POLL_SECONDS) if stream is None else math.inf
    held: HeldStream | None = None
    while (now := time.monotonic()) < deadline:
        if now >= next_poll:
            reviewer.poll(tallies["poll"])
            next_poll = max(next_poll + POLL_SECONDS, time.monotonic())
        elif now >= next_page:
            next_page = now + PAGE_SECONDS
            shown = reviewer.load_next_page(tallies["page"])
            if stream is not None:
                if held is not None:
                    held.leave()
                held = HeldStream(stream[0], stream[1], reviewer.cookie(), tallies["stream"]) if shown else None
        else:
            time.sleep(min(next_page, next_poll, deadline) - now)
    if held is not None:
        held.leave()
        held.thread.join(HTTP_TIMEOUT)


def write_decisions(item_ids: list[int], stop: threading.Event, tally: Tally) -> None:
    """Another reviewer, through the services: a rejection (which every kind takes) every
    ``WRITER_SECONDS``, in a fixed shuffle of the items, so the inbox's version keeps changing."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    from governance.kernel.principals import Principal
    from governance.reviews import services as reviews

    actor = Principal(user=get_user_model().objects.get(username=WRITER))
    try:
        for item_id in random.Random(37).sample(item_ids, len(item_ids)):
            if stop.wait(WRITER_SECONDS):
                return
            started = time.perf_counter()
            try:
                reviews.decide(item_id, actor=actor, decision="reject", comment="bench writer")
            except Exception as exc:  # counted and reported: the writer keeps the versions moving
                tally.failed("exception", repr(exc))
            else:
                tally.answered(200, time.perf_counter() - started)
    finally:
        connection.close()


def live_arm(
    reviewers: list[Reviewer], items: list[int], duration: float, stream: tuple[int, str] | None
) -> dict[str, Any]:
    tallies = {"page": Tally(), "poll": Tally(), "stream": Tally()}
    writer = Tally()
    stop = threading.Event()
    writing = threading.Thread(target=write_decisions, args=(items, stop, writer), daemon=True)
    deadline = time.monotonic() + duration
    clients = [
        threading.Thread(target=page_quickly, args=(reviewer, deadline, tallies, random.Random(n), stream), daemon=True)
        for n, reviewer in enumerate(reviewers)
    ]
    writing.start()
    try:
        run_threads(clients)
    finally:
        stop.set()
        writing.join(HTTP_TIMEOUT)
    used = ("page", "poll") if stream is None else ("page", "stream")
    out: dict[str, Any] = {name: tallies[name].summary() for name in used}
    out["errors"] = sum(out[name]["errors"] for name in used)
    out["writer"] = writer.summary()
    return out


def session_stream_path(reviewer: Reviewer, session_id: str) -> str:
    """The event stream the session page opens (its ``sse-connect``, with the version it shows)."""
    page = reviewer.http.get(f"{reviewer.base}/sessions/{session_id}/", timeout=HTTP_TIMEOUT)
    found = re.search(r'sse-connect="([^"]+)"', page.text)
    if page.status_code != 200 or found is None:
        raise RuntimeError(f"the session page has no event stream ({page.status_code})")
    return found[1].replace("&amp;", "&")


def live_phase(base: str, port: int, clients: int, duration: float, tag: str) -> dict[str, Any]:
    reviewers = [Reviewer(base, CLIENT_NAME.format(n)) for n in range(1, clients + 1)]
    run_threads([threading.Thread(target=r.log_in, daemon=True) for r in reviewers])
    if not all(r.http.cookies.get("sessionid") for r in reviewers):
        raise RuntimeError("not every reviewer could sign in")
    out: dict[str, Any] = {}
    print(f"live (polling): {clients} reviewers paging for {duration:g} s, a decision every 2 s ...", flush=True)
    out["polling"] = live_arm(reviewers, seed(f"{tag}3"), duration, None)
    items = seed(f"{tag}4")
    stream = (port, session_stream_path(reviewers[0], chat_session()))
    print(f"live (event streams, the baseline): {clients} reviewers paging for {duration:g} s ...", flush=True)
    out["event_streams"] = live_arm(reviewers, items, duration, stream)
    out["event_streams"]["stream_path"] = stream[1]
    return out


# --- The benchmark --------------------------------------------------------------------------------


def ratios(phases: dict[str, Any]) -> dict[str, float]:
    desktop, phone, live = phases["page"]["desktop"], phases["page"]["phone"], phases["live"]
    return {
        "height_1440_vs_issue_before": div(desktop["height_px"], ISSUE_BEFORE["height_1440_px"]),
        "height_390_vs_issue_before": div(phone["height_px"], ISSUE_BEFORE["height_390_px"]),
        "items_per_screen_1440_vs_issue_before": div(
            desktop["rows_in_first_screen"], ISSUE_BEFORE["items_per_screen_1440"]
        ),
        "live_errors_polling_vs_event_streams": div(live["polling"]["errors"], live["event_streams"]["errors"]),
    }


def targets(phases: dict[str, Any], seeded: int) -> dict[str, bool]:
    desktop, phone = phases["page"]["desktop"], phases["page"]["phone"]
    keyboard, bulk, live = phases["keyboard"], phases["bulk"], phases["live"]["polling"]
    return {
        "25 items wholly in the first 1440 x 900 screen": desktop["rows_in_first_screen"] >= 25,
        "the first item wholly in the first 390 x 844 screen": phone["first_in_first_screen"],
        "no horizontal overflow at 390 px": phone["scroll_width_px"] <= phone["window"][0],
        f"all {seeded} decided with the keyboard (database)": keyboard["database"]["pending"] == 0
        and keyboard["database"]["decisions"] == seeded,
        f"all {seeded} decided with bulk actions (database)": bulk["database"]["pending"] == 0
        and bulk["database"]["decisions"] == seeded,
        "no live-update error while 20 reviewers page (polling)": live["errors"] == 0,
    }


def _page_lines(page: dict[str, Any]) -> list[str]:
    desktop, phone, before = page["desktop"], page["phone"], ISSUE_BEFORE
    return [
        "page (after: measured now; before: issue 37's figures for the old inbox, not measured here)",
        f"  height at 1440 x 900: {desktop['height_px']} px (before, from the issue: {before['height_1440_px']} px);"
        f" the pending list ends at {desktop['pending_section_bottom_px']} px, then"
        f" {desktop['recent_decisions_shown']} recent decisions",
        f"  items wholly in the first screen at 1440: {desktop['rows_in_first_screen']} of {desktop['rows']}"
        f" (before, from the issue: {before['items_per_screen_1440']})",
        f"  height at 390 x 844: {phone['height_px']} px (before, from the issue: {before['height_390_px']} px);"
        f" the pending list ends at {phone['pending_section_bottom_px']} px",
        f"  first item wholly in the first screen at 390: {phone['first_in_first_screen']}"
        f" (its bottom at {phone['first_row_bottom_px']} px; before, from the issue: no)",
        f"  width at 390: scrollWidth {phone['scroll_width_px']} px, innerWidth {phone['window'][0]} px",
    ]


def _decision_lines(keyboard: dict[str, Any], bulk: dict[str, Any]) -> list[str]:
    lines = [
        f"keyboard: {keyboard['decided_on_page']} decided in {keyboard['seconds']} s (keys {keyboard['keys']};"
        f" j needed after {keyboard['j_after_decisions']} decisions; {keyboard['approvals_that_opened_the_item_first']}"
        " approvals opened the item first, approved by a second a), key to row decided"
        f" p50 {keyboard['key_to_row_decided_p50_ms']} ms / p95 {keyboard['key_to_row_decided_p95_ms']} ms,"
        f" {keyboard['seconds_waiting_for_next_item']} s waiting for the next item; database: {keyboard['database']}",
        f"bulk: {bulk['seconds']} s from the page load (approve all matching {bulk['approve_all_matching_s']} s,"
        f" questions {bulk['questions_s']} s); messages {bulk['messages']}; database: {bulk['database']}",
    ]
    if keyboard["stuck"]:
        lines.append(f"  keyboard STUCK: {json.dumps(keyboard['stuck'])}")
    for name, phase in (("keyboard", keyboard), ("bulk", bulk)):
        if phase["browser"]["answers_400_plus"] or phase["browser"]["script_errors"]:
            lines.append(f"  {name} browser trouble: {json.dumps(phase['browser'])}")
    return lines


def _live_lines(live: dict[str, Any], config: dict[str, Any]) -> list[str]:
    lines = [
        f"live, {config['clients']} reviewers paging for {config['duration_s']:g} s, a decision every"
        f" {config['writer_seconds']:g} s:",
        f"  {'arm':<18}{'kind':<8}{'requests':>9}{'errors':>8}{'p50 ms':>9}{'p95 ms':>9}  outcomes",
    ]
    samples = []
    for arm, label in (("polling", "after: polling"), ("event_streams", "before: streams")):
        for kind in ("page", "poll", "stream"):
            if kind in live[arm]:
                t = live[arm][kind]
                lines.append(
                    f"  {label:<18}{kind:<8}{t['requests']:>9}{t['errors']:>8}{t['p50_ms']:>9.1f}{t['p95_ms']:>9.1f}"
                    f"  {t['outcomes']}"
                )
                samples += [f"  error sample ({arm} {kind}): {sample}" for sample in t["samples"][:2]]
        writer = live[arm]["writer"]
        lines.append(f"  {label:<18}writer decided {writer['requests']}, errors {writer['errors']}")
    lines += samples
    lines.append(
        f"  errors (answers >= 400 and exceptions): after (polling) {live['polling']['errors']}, before (event"
        f" streams, the baseline) {live['event_streams']['errors']}; the issue measured"
        f" {ISSUE_BEFORE['live_update_failures_paging']} on the old inbox"
    )
    return lines


def report(result: dict[str, Any]) -> str:
    phases = result["phases"]
    lines = [
        *_page_lines(phases["page"]),
        *_decision_lines(phases["keyboard"], phases["bulk"]),
        *_live_lines(phases["live"], result["config"]),
        f"server log: {json.dumps(result['server_log'])}",
        "",
        *(f"{name:<42}{value:.3f}" for name, value in result["ratios"].items()),
    ]
    box = result["machine"]
    lines.append(f"load average before/after: {box['loadavg_before'][0]} / {box['loadavg_after'][0]}")
    lines.append("")
    return "\n".join(lines)


def run(duration: float = 60, clients: int = 20) -> dict:
    """Prepare the database, start the web role, run the four phases, write the JSON."""
    load_before = os.getloadavg()
    database = prepare_database(DB_NAME, ENVIRONMENT)
    tag = uuid.uuid4().hex[:8]
    for name in (BROWSER_REVIEWER, WRITER, *(CLIENT_NAME.format(n) for n in range(1, clients + 1))):
        reviewer(name)
    print("seeding 200 pending items ...", flush=True)
    items = seed(f"{tag}1")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = Path(tempfile.gettempdir()) / f"bench-inbox-gunicorn-{port}.log"
    server = start_web(port, log)
    phases: dict[str, Any] = {}
    try:
        wait_healthy(server, port, log)
        print(f"web role (gunicorn gthread, 2 workers x 8 threads) on {base}, log {log}", flush=True)
        phases.update(browser_phases(base, items))
        phases["keyboard"]["database"] = decisions_of(items)
        items = seed(f"{tag}2")
        phases["bulk"] = bulk_phase(base)
        phases["bulk"]["database"] = decisions_of(items)
        phases["live"] = live_phase(base, port, clients, duration, tag)
    finally:
        stop_server(server)
        stop_embedded_db_if_ours()
    from django.conf import settings

    result = {
        "benchmark": "inbox",
        "config": {
            "duration_s": duration,
            "clients": clients,
            "pending": len(items),
            "page_seconds": PAGE_SECONDS,
            "writer_seconds": WRITER_SECONDS,
            "live_max_streams": settings.LIVE_MAX_STREAMS,
        },
        "config_server": {
            "command": "manage.py serve --role web (role_commands)",
            "workers": int(ENVIRONMENT["WEB_CONCURRENCY"]),
            "threads": int(ENVIRONMENT["WEB_THREADS"]),
            "worker_class": "gthread",
            "settings": SETTINGS,
        },
        "machine": machine(
            database, load_before, gunicorn=package_version("gunicorn"), playwright=package_version("playwright")
        ),
        "issue_before": ISSUE_BEFORE,
        "phases": phases,
        "server_log": server_log_findings(log),
        "ratios": ratios(phases),
        "targets": targets(phases, len(items)),
    }
    return publish("inbox", result, report(result))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench inbox", description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=60, help="seconds of each live-update arm (default 60)")
    parser.add_argument("--clients", type=int, default=20, help="reviewers paging in the live phase (default 20)")
    args = parser.parse_args(argv)
    return until_interrupted(lambda: run(duration=args.duration, clients=args.clients))


if __name__ == "__main__":
    sys.exit(main())
