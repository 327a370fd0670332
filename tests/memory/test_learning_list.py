"""The learnings page (issue 17.3): browse by scope, domain and minimum reuse score, search the
text by words, or by meaning through the API's own search, nearest learning first."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import pytest
from django.test import Client

from memory import indexing
from tests.factories.memory import LearningFactory, ReuseScoreFactory

URL = "/memory/learnings/"


def listed(client: Client, **query: str) -> list[int]:
    """The learnings the page lists, in its order, by id."""
    response = client.get(URL, query)
    assert response.status_code == 200
    return [int(pk) for pk in re.findall(r'href="/memory/learnings/(\d+)/"', unescape(response.content.decode()))]


@pytest.fixture
def three(db) -> dict[str, Any]:
    rows = {
        "canonical": LearningFactory(story="PD-1", domain="seo", scope="global", text="Check the canonical URLs."),
        "retry": LearningFactory(story="PD-2", domain="seo", text="Retry the flaky deploy once."),
        "index": LearningFactory(story="PD-3", domain="data", scope="domain", text="Build the index concurrently."),
    }
    ReuseScoreFactory(story="PD-1", nb_injections=5, nb_domains=2)
    ReuseScoreFactory(story="PD-3", nb_injections=1, nb_domains=1)
    return rows


def test_a_viewer_browses_by_scope_domain_and_minimum_score(client, viewer, three):
    client.force_login(viewer)
    canonical, retry, index = (three[name].pk for name in ("canonical", "retry", "index"))

    assert listed(client) == [canonical, index, retry]  # best score first, the unscored last
    assert listed(client, scope="global") == [canonical]
    assert listed(client, domain="seo") == [canonical, retry]
    assert listed(client, min_score="1") == [canonical]
    assert listed(client, q="FLAKY") == [retry]
    assert listed(client, scope="no-such-scope", min_score="many") == [canonical, index, retry]  # ignored


def test_the_page_shows_the_reuse_score_and_pages_through_many(client, viewer, three, monkeypatch):
    from memory import views

    monkeypatch.setattr(views, "LEARNINGS_PER_PAGE", 2)
    client.force_login(viewer)

    html = unescape(client.get(URL).content.decode())

    assert '<td class="num">2.4000</td>' in html  # 0.4 * 5 injections + 0.2 * 2 domains
    assert "Page 1 of 2 (3 learnings)" in html
    assert listed(client, page="2") == [three["retry"].pk]


def test_a_search_by_meaning_lists_the_nearest_learning_first(client, viewer, three):
    from memory.embeddings import get_backend

    migrations = LearningFactory(
        domain="data", text="Adding a column with a default rewrites the table and locks it during the migration."
    )
    styling = LearningFactory(domain="web", text="Button colours must follow the design system palette.")
    indexing.embed("learning", [migrations.pk, styling.pk], backend=get_backend("local"))
    client.force_login(viewer)

    found = listed(client, q="schema change blocks writes on a big table", mode="semantic")

    assert found == [migrations.pk, styling.pk]  # only learnings with a vector, nearest first
    assert listed(client, q="schema change", mode="semantic", domain="web") == [styling.pk]
    assert listed(client, q="schema change", mode="semantic", scope="global") == []


def test_people_without_the_viewer_role_and_visitors_are_turned_away(client, three):
    from tests.factories.governance import UserFactory

    assert client.get(URL).status_code == 302
    client.force_login(UserFactory(username="nobody", roles=[]))
    assert client.get(URL).status_code == 403


def test_a_search_by_meaning_with_the_embedder_down_says_so_and_names_no_host(client, viewer, three, settings):
    settings.EMBEDDING_BACKEND = "ollama"
    settings.EMBEDDING_URL = "http://127.0.0.1:1"
    settings.EMBEDDING_TIMEOUT_SECONDS = 1
    client.force_login(viewer)

    response = client.get(URL, {"q": "flaky deploys", "mode": "semantic"})

    assert response.status_code == 200
    html = unescape(response.content.decode())
    assert "The embedding backend is unavailable; retry later." in html
    assert "127.0.0.1" not in html
    assert listed(client, q="flaky", mode="text") == [three["retry"].pk]  # searching by words still works
