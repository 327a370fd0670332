"""The contract pages in a real browser: a viewer searches the catalog (htmx swaps the table and
pushes the URL), opens a contract, audits a prompt's example answer without leaving the page, and
downloads the report as CSV."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from tests.e2e.test_inbox_browser import log_in
from tests.governance.contracts.test_pages import (
    ANSWER,
    CSV_HEADER,
    GOOD_RANKING,
    INTENT,
    RANKING,
    STRING_ID,
    checked,
    imported,
)


@pytest.mark.django_db(transaction=True)
def test_a_viewer_searches_the_catalog_audits_a_prompt_and_downloads_the_report(page, viewer, agent):
    from playwright.sync_api import expect

    imported(RANKING, INTENT, ANSWER)
    for output in (GOOD_RANKING, STRING_ID, STRING_ID):
        checked(RANKING, output, days_ago=1, agent=agent)

    log_in(page, "victor")
    page.get_by_role("link", name="Contracts", exact=True).click()
    expect(page.locator("#contract-table")).to_contain_text("3 contracts")
    page.get_by_label("Search").fill("ranking")
    expect(page.locator("#contract-table")).to_contain_text("1 contract")
    expect(page).to_have_url(re.compile(r"/contracts/\?q=ranking"))
    expect(page.get_by_role("link", name=INTENT)).to_have_count(0)

    page.get_by_role("link", name=RANKING, exact=True).click()
    expect(page.locator("h1")).to_contain_text(RANKING)
    expect(page.locator(".top-paths")).to_contain_text("rankings[*].id")
    page.get_by_label("JSON Schema or example answer").fill('{"rankings": [{"id": "7", "score": 0.5}]}')
    page.get_by_role("button", name="Audit against version 1").click()
    result = page.locator("#spec-audit-result")
    expect(result).to_contain_text("1 problem found")
    expect(result).to_contain_text("rankings[*].id: expected numeric id, declared string")
    expect(page.locator("h1")).to_contain_text(RANKING)  # swapped in place: still the same page

    with page.expect_download() as download_info:
        page.get_by_role("link", name="CSV").click()
    download = download_info.value
    assert download.suggested_filename.startswith(f"contract-{RANKING}-since-")
    rows = list(csv.reader(Path(download.path()).read_text(encoding="utf-8").splitlines()))
    assert rows[0] == CSV_HEADER
    assert rows[1] == ["total", "", "", "", "3", "1", "0.3333", "", "", "", ""]
    assert rows[-1] == [
        "violation",
        "",
        "rankings[*].id",
        "wrong_type",
        "",
        "",
        "",
        "2",
        "identifiant numérique existant",
        "Oui",
        "Permet d\u2019associer l\u2019ajustement au candidat source.",
    ]
