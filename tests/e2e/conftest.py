"""Browser tests: Playwright (sync API) drives Debian's chromium against pytest-django's live
server. Never `playwright install`: CI installs the distribution's chromium (.ci/run).

Playwright's sync API runs an asyncio loop in the test's thread, so Django would refuse the ORM
calls the test makes between browser steps ("cannot call this from an async context"). Those
calls are plain synchronous code, which is what DJANGO_ALLOW_ASYNC_UNSAFE allows; it has to be
set before Django first checks it, hence at import time.
"""

from __future__ import annotations

import os

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connections

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
TIMEOUT_MS = 15_000


@pytest.fixture
def browser() -> Iterator[Any]:
    """A headless chromium per test: the Playwright loop lives only as long as the test.

    While the loop runs, Django keeps the test's database connections apart from the usual
    ones; they are closed here, inside the loop, or they would outlive the test database."""
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed: .ci/run installs it")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
            connections.close_all()


@pytest.fixture
def page(browser: Any, live_server: Any) -> Iterator[Any]:
    """A fresh browser context (no cookies) whose relative URLs go to the live server."""
    context = browser.new_context(base_url=live_server.url)
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    try:
        yield page
    finally:
        context.close()
