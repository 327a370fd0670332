"""The step-0 block never fails for its query text (issue 34 point 3, seed 004 "non bloquant"):
whatever an agent sends in ``query_text`` (too long, 1 MB, empty, missing, blank, invisible
characters only, not even text), it gets 200 and the three sections, with the seed's two
placeholders only. An over-long query is cut to what the embedder reads; one with nothing to embed
is served by story and domain alone."""

from __future__ import annotations

import pytest

from memory.injection import NO_RESULT, QUERY_CHARS, UNAVAILABLE, build_block, searchable_query
from memory.models import LearningInjection
from tests.memory.test_injection import learning, note

pytestmark = pytest.mark.django_db

BLOCK = {"story": "PD-9", "domain": "seo", "project": "shop"}
NAMES = ["learnings", "veille", "clarifications"]
HOSTILE = {
    "just over the old bound": "retry the flaky deploy " * 500,  # 11,500 characters
    "one megabyte": "x" * (1024 * 1024 - 200),
    "empty": "",
    "blank": " \t\n\r  \u3000",
    "invisible only": "\u200b\u200c\u200d\u2060\ufeff\u00ad\u202e",
    "a lone surrogate": "\ud800",
    "null": None,
    "a number": 42,
    "an object": {"topic": "deploys"},
}


@pytest.fixture(autouse=True)
def hashing_embeddings(settings):
    settings.DEBUG = True
    settings.EMBEDDING_BACKEND = "hashing"
    settings.EMBEDDING_DIMENSION = 64


@pytest.fixture
def seo_api(vlevel_api):
    """Seed 001's example agent: domain seo, long-term and shared memory on."""
    return vlevel_api


def sections_of(response) -> list[tuple[str, str]]:
    assert response.status_code == 200, response.content[:500]
    return [(s["name"], s["status"]) for s in response.json()["sections"]]


@pytest.mark.parametrize("query", list(HOSTILE.values()), ids=list(HOSTILE))
def test_any_query_text_gets_200_and_the_three_sections(seo_api, query):
    learning("retry the flaky deploy", story="PD-9", domain="seo")

    response = seo_api.post("/memory/injection-block", {**BLOCK, "query_text": query})

    assert [name for name, _ in sections_of(response)] == NAMES
    markdown = response.json()["markdown"]
    assert UNAVAILABLE not in markdown
    assert [line for line in markdown.splitlines() if line.startswith("#")] == [
        "## Learnings",
        "## Veille",
        "## Clarifications",
    ]


def test_a_missing_query_text_gets_200(seo_api):
    response = seo_api.post("/memory/injection-block", BLOCK)
    assert sections_of(response) == [(n, "empty") for n in NAMES]
    assert response.json()["markdown"].count(NO_RESULT) == 3


def test_the_other_fields_keep_their_validation(seo_api):
    response = seo_api.post("/memory/injection-block", {"domain": "seo", "project": "shop", "query_text": ""})
    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["body", "story"]
    assert not LearningInjection.objects.exists()


def test_an_over_long_query_is_cut_to_what_the_embedder_reads():
    long = "deploy " * 5000
    assert searchable_query(long) == long[:QUERY_CHARS]
    assert QUERY_CHARS >= 256 * 8  # 256 word pieces of the local model, at most a few characters each
    assert searchable_query("  \u200b ") is None
    assert searchable_query("a\ud800b") == "ab"


def test_an_over_long_query_still_finds_by_meaning(seo_api):
    near = learning("retry the flaky deploy", story="PD-1", domain="seo")
    learning("gardening tomatoes in spring", story="PD-2", domain="seo")

    response = seo_api.post("/memory/injection-block", {**BLOCK, "query_text": "retry the flaky deploy " * 600})

    items = response.json()["sections"][0]["items"]
    assert items[0]["id"] == near.pk


def test_an_empty_query_serves_the_storys_then_the_domains_learnings_by_score_and_date(seo_api):
    from datetime import date

    other_domain = learning("checkout lesson", story="PD-9", domain="checkout", scope="global")
    older = learning("an older seo lesson", story="PD-1", domain="seo", created=date(2026, 1, 1))
    newer = learning("a newer seo lesson", story="PD-2", domain="seo", created=date(2026, 2, 1))
    scored = learning("a scored seo lesson", story="PD-3", domain="seo", score="0.5")
    own_story = learning("this story's lesson", story="PD-9", domain="seo", created=date(2025, 1, 1))
    strong = note("a strong note", "deploys", "fort")
    note("a weak note", "deploys", "faible")

    response = seo_api.post("/memory/injection-block", {**BLOCK, "query_text": "   "})

    sections = {s["name"]: s for s in response.json()["sections"]}
    assert [i["id"] for i in sections["learnings"]["items"]] == [own_story.pk, scored.pk, newer.pk, older.pk]
    assert other_domain.pk not in {i["id"] for i in sections["learnings"]["items"]}
    assert [i["id"] for i in sections["veille"]["items"]] == [strong.pk]
    served = set(LearningInjection.objects.values_list("learning_id", flat=True))
    assert served == {own_story.pk, scored.pk, newer.pk, older.pk}


def test_the_empty_query_block_read_section_by_section_is_the_same(seo_api):
    """The fallback path (section by section) serves the same block as the one statement."""
    from governance.kernel.principals import SYSTEM
    from memory import injection

    learning("a seo lesson", story="PD-9", domain="seo")
    note("a strong note", "deploys", "fort")
    one = build_block(actor=SYSTEM, story="PD-9", domain="seo", project="shop", query_text="", record=False)
    reach = injection.reach_of(SYSTEM)
    by_section = injection._section_by_section(None, reach, "PD-9", "seo", "shop", None)
    assert [s.items for s in by_section] == [s["items"] for s in one["sections"]]
