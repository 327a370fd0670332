"""The step-0 injection block and memory search: ranking, limits, filters, and sections that
degrade alone when their source really fails (seed 004 section 2.5)."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.utils import timezone

from governance.kernel.principals import SYSTEM
from memory import clarifications, indexing
from memory.embeddings import HashingBackend, OllamaBackend
from memory.injection import NO_RESULT, UNAVAILABLE, build_block
from memory.models import Learning, LearningInjection, VeilleNote
from memory.tags import compute_tags_hash
from tests.factories.memory import LearningFactory, ReuseScoreFactory, VeilleNoteFactory
from tests.factories.sessions import AISessionFactory as SessionFactory
from tests.support.manifests import writes_into

HASHING = HashingBackend(dimension=64)


def learning(
    text: str,
    *,
    story: str = "PD-1",
    created: date | None = None,
    scope: str = "story",
    score=None,
    domain: str = "tooling",
) -> Learning:
    item = LearningFactory.create(
        story=story,
        tags=[f"#{story.lower()}"],
        text=text,
        date_created=created or date(2026, 1, 1),
        scope=scope,
        domain=domain,
    )
    if score is not None:
        ReuseScoreFactory(story=story, gate=item.gate, tags_hash=item.tags_hash, reuse_score=Decimal(score))
    indexing.embed("learning", [item.pk], backend=HASHING)
    return item


def note(title: str, summary: str, impact: str, tags: list[str] | None = None) -> VeilleNote:
    item = VeilleNoteFactory.create(title=title, impact_pv=impact, summary=summary, tags=tags or [])
    indexing.embed("veille", [item.pk], backend=HASHING)
    return item


def block(query: str = "retry the flaky deploy", backend=HASHING) -> dict:
    return build_block(actor=SYSTEM, story="PD-9", domain="tooling", project="gov", query_text=query, backend=backend)


def section(result: dict, name: str) -> dict:
    return next(s for s in result["sections"] if s["name"] == name)


@pytest.mark.django_db
def test_tc_nom_12_three_sections_with_at_most_5_3_3():
    for n in range(8):
        learning(f"retry the flaky deploy {n}", story=f"PD-{n}")
    for n in range(5):
        note(f"note {n}", f"retry the flaky deploy {n}", "fort")
    for n in range(5):
        clarifications.persist_clarifications(
            story=f"PD-{100 + n}",
            domain="tooling",
            project="gov",
            answers=["a", "b", "c", "d"],
            actor=SYSTEM,
            now=timezone.now() + timedelta(minutes=n),
        )

    result = block()

    assert [len(section(result, name)["items"]) for name in ("learnings", "veille", "clarifications")] == [5, 3, 3]
    markdown = result["markdown"]
    assert markdown.index("## Learnings") < markdown.index("## Veille") < markdown.index("## Clarifications")
    assert [c["story"] for c in section(result, "clarifications")["items"]] == ["PD-104", "PD-103", "PD-102"]


@pytest.mark.django_db
def test_tc_nom_07_tc_plan_03_tc_plan_05_similarity_then_score_then_newest():
    same = "retry the flaky deploy"
    scored = learning(same, story="PD-1", score="0.8")
    unscored_new = learning(same, story="PD-2", created=date(2026, 3, 1))
    unscored_old = learning(same, story="PD-3", created=date(2026, 2, 1))
    farther = learning("completely unrelated words about gardening", story="PD-4", score="9.9")

    ids = [item["id"] for item in section(block(same), "learnings")["items"]]

    assert ids[:3] == [scored.pk, unscored_new.pk, unscored_old.pk]
    assert ids.index(farther.pk) == 3


@pytest.mark.django_db
def test_every_learning_served_is_recorded_as_an_injection():
    served = learning("retry the flaky deploy")
    block()
    injection = LearningInjection.objects.get()
    assert (injection.learning_id, injection.story, injection.domain, injection.project) == (
        served.pk,
        "PD-9",
        "tooling",
        "gov",
    )


@pytest.mark.django_db
def test_tc_nom_11_archived_learnings_never_come_back():
    archived = learning("retry the flaky deploy", scope="archived")
    indexing.embed("learning", [archived.pk], backend=HASHING)
    live = learning("retry the flaky deploy later", story="PD-2")
    ids = [item["id"] for item in section(block(), "learnings")["items"]]
    assert ids == [live.pk]


@pytest.mark.django_db
def test_tc_plan_04_veille_keeps_only_strong_impacts_after_the_knn():
    note("closest", "retry the flaky deploy", "faible")
    strong = note("strong", "retry the flaky deploy today", "fort")
    medium = note("medium", "retry deploy", "modere")
    titles = [item["title"] for item in section(block(), "veille")["items"]]
    assert titles == [strong.title, medium.title] or titles == [medium.title, strong.title]
    assert "closest" not in titles


@pytest.mark.django_db
def test_tc_nom_13_tc_err_06_empty_sections_say_aucun_resultat():
    result = block()
    assert result["markdown"].count(NO_RESULT) == 3
    assert {s["status"] for s in result["sections"]} == {"empty"}


@pytest.mark.django_db
def test_tc_nom_14_tc_err_04_an_embedding_backend_down_degrades_two_sections_only(caplog):
    clarifications.persist_clarifications(
        story="PD-7", domain="tooling", project="gov", answers=list("abcd"), actor=SYSTEM, now=timezone.now()
    )
    down = OllamaBackend(base_url="http://127.0.0.1:1", model="nomic-embed-text", dimension=768, timeout=1)

    result = block(backend=down)

    assert [s["status"] for s in result["sections"]] == ["unavailable", "unavailable", "ok"]
    assert result["markdown"].count(UNAVAILABLE) == 2
    assert "[inject] section learnings failed" in caplog.text


@pytest.mark.django_db
def test_tc_err_05_a_database_error_in_one_section_leaves_the_others():
    learning("retry the flaky deploy")
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE memory_veillenote RENAME TO memory_veillenote_gone")
    try:
        result = block()
    finally:
        with connection.cursor() as cursor:
            cursor.execute("ALTER TABLE memory_veillenote_gone RENAME TO memory_veillenote")

    assert [s["status"] for s in result["sections"]] == ["ok", "unavailable", "empty"]


@pytest.mark.django_db
def test_the_api_always_answers_200_with_the_block(vlevel_api, settings):
    settings.EMBEDDING_BACKEND = "ollama"
    settings.EMBEDDING_URL = "http://127.0.0.1:1"
    settings.EMBEDDING_TIMEOUT_SECONDS = 1

    response = vlevel_api.post(
        "/memory/injection-block", {"story": "PD-9", "domain": "tooling", "project": "gov", "query_text": "x"}
    )

    assert response.status_code == 200
    assert [s["status"] for s in response.json()["sections"]] == ["unavailable", "unavailable", "empty"]


@pytest.mark.django_db
def test_learnings_through_the_api(agent_api, viewer_api, outsider_api, agent):
    writes_into(agent, "core")
    SessionFactory(agent=agent, story="PD-5")  # a gate result needs the agent's work on its story
    created = agent_api.post(
        "/memory/learnings",
        {"story": "PD-5", "gate": 3, "domain": "core", "project": "gov", "tags": ["B", "#a", "a"], "text": "t"},
    )
    assert created.status_code == 201
    body = created.json()
    assert body["scope"] == "story"
    assert body["tags_hash"] == compute_tags_hash(["#a", "b"])
    read = viewer_api.get(f"/memory/learnings/{body['id']}").json()
    assert (read["reuse_score"], read["tags"]) == (0.0, ["#a", "#b"])
    assert outsider_api.get(f"/memory/learnings/{body['id']}").status_code == 403
    bad = agent_api.post("/memory/learnings", {"story": "PD-5", "gate": 3, "domain": "t", "project": "g", "text": ""})
    assert bad.status_code == 422
    assert bad.json()["errors"][0]["loc"] == ["body", "text"]
    assert agent_api.post("/memory/gate-results", {"story": "PD-5", "gate": 8, "verdict": "GO"}).status_code == 201
    assert agent_api.post("/memory/gate-results", {"story": "PD-5", "gate": 8, "verdict": "MAYBE"}).status_code == 422


@pytest.mark.django_db
def test_search_with_the_real_local_model_ranks_by_meaning(viewer_api, settings):
    from memory.embeddings import get_backend

    local = get_backend("local")
    migrations = LearningFactory(
        domain="data", text="Adding a column with a default rewrites the table and locks it during the migration."
    )
    styling = LearningFactory(domain="web", text="Button colours must follow the design system palette.")
    indexing.embed("learning", [migrations.pk, styling.pk], backend=local)

    hits = viewer_api.get("/memory/search", {"q": "schema change blocks writes on a big table", "k": 2}).json()

    assert [hit["id"] for hit in hits] == [migrations.pk, styling.pk]
    assert hits[0]["score"] > hits[1]["score"]
    only_web = viewer_api.get("/memory/search", {"q": "schema change", "domain": "web"}).json()
    assert [hit["id"] for hit in only_web] == [styling.pk]


@pytest.mark.django_db
def test_the_block_keeps_exactly_its_three_sections_whatever_the_items_say():
    learning("Retry the flaky deploy.\n## Injected heading\n# and a title\nthen more")
    note("Deploys\n## break", "Flaky deploys: " + "retry the deploy step. " * 40 + "\n# Not a heading", "fort")
    clarifications.persist_clarifications(
        story="PD-3", domain="tooling", project="gov", answers=["a\n## b", "c", "d", "e"], actor=SYSTEM
    )

    markdown = block()["markdown"]

    headings = [line for line in markdown.splitlines() if line.startswith("#")]
    assert headings == ["## Learnings", "## Veille", "## Clarifications"]
    assert "Injected heading" in markdown  # the text is kept, on its item's line


@pytest.mark.django_db
def test_memory_search_with_the_embedder_down_is_a_503_that_names_no_host(vlevel_api, settings):
    settings.EMBEDDING_BACKEND = "ollama"
    settings.EMBEDDING_URL = "http://10.255.255.1:11434"
    settings.EMBEDDING_TIMEOUT_SECONDS = 1

    response = vlevel_api.get("/memory/search", {"q": "flaky deploys"})

    assert response.status_code == 503
    assert response["Content-Type"] == "application/problem+json"
    assert int(response["Retry-After"]) > 0
    assert "10.255.255.1" not in response.content.decode()


@pytest.mark.django_db
def test_a_watch_notes_tags_are_on_its_block_line_and_narrow_a_search(viewer_api, settings):
    settings.DEBUG = True
    settings.EMBEDDING_BACKEND = "hashing"
    settings.EMBEDDING_DIMENSION = 64
    both = note("Index bloat", "retry the flaky deploy after a reindex", "fort", tags=["Postgres", "vectors"])
    note("Vacuum", "retry the flaky deploy after a vacuum", "fort", tags=["postgres"])

    veille = section(block(), "veille")
    tagged = viewer_api.get("/memory/search", {"q": "flaky deploy", "kind": "veille", "tags": ["postgres", "VECTORS"]})
    wrong_kind = viewer_api.get("/memory/search", {"q": "flaky deploy", "tags": ["postgres"]})

    assert (
        "- **Index bloat** (2026-05-01, impact fort): retry the flaky deploy after a reindex (tags: Postgres, vectors)"
        in (block()["markdown"])
    )
    assert next(item for item in veille["items"] if item["id"] == both.pk)["tags"] == ["Postgres", "vectors"]
    assert [hit["id"] for hit in tagged.json()] == [both.pk]
    assert wrong_kind.status_code == 422
    assert wrong_kind.json()["errors"][0]["loc"] == ["query", "tags"]


def _fleet_memory() -> None:
    """Enough of each source that every section has items, ties and a filter to apply."""
    for n in range(7):
        learning(f"retry the flaky deploy {n}", story=f"PD-{n}", score=str(n / 10) if n % 2 else None)
    learning("retry the flaky deploy, archived", story="PD-50", scope="archived")
    for n, impact in enumerate(["fort", "modere", "faible", "fort", "fort"]):
        note(f"note {n}", f"retry the flaky deploy {n}", impact, tags=[f"t{n}"] if n % 2 else None)
    for n in range(4):
        for version in (1, 2):
            clarifications.persist_clarifications(
                story=f"PD-{200 + n}",
                domain="tooling",
                project="gov",
                answers=[f"{n}.{version}.{q}" for q in "abcd"],
                actor=SYSTEM,
                now=timezone.now() + timedelta(minutes=n, seconds=version),
            )


@pytest.mark.django_db
def test_the_one_statement_block_equals_the_block_read_section_by_section():
    from memory import injection
    from memory.reach import reach_of

    _fleet_memory()
    embedded = injection._embedding(HASHING, "retry the flaky deploy")
    reach = reach_of(SYSTEM)

    one = injection._one_statement(embedded, reach, "PD-9", "tooling", "gov", None)
    by_section = injection._section_by_section(embedded, reach, "PD-9", "tooling", "gov", None)

    assert [(s.name, s.status, s.items, s.lines) for s in one] == [
        (s.name, s.status, s.items, s.lines) for s in by_section
    ]
    assert [len(s.items) for s in one] == [5, 3, 3]


@pytest.mark.django_db(transaction=True)
def test_a_block_is_one_statement_to_the_database_and_records_its_injections(django_assert_num_queries):
    from memory import search

    _fleet_memory()
    search.candidate_count("learning", HASHING.model)  # the search calibrations, read once a minute
    search.iterative_scans()  # the pgvector version, read once per process

    with django_assert_num_queries(1):
        result = block()

    served = [item["id"] for item in section(result, "learnings")["items"]]
    assert len(served) == 5
    assert sorted(LearningInjection.objects.filter(story="PD-9").values_list("learning_id", flat=True)) == sorted(
        served
    )


@pytest.mark.django_db(transaction=True)
def test_each_search_of_the_block_runs_at_its_own_calibrated_ef_search():
    """One ef_search for both searches would be the larger: the learnings, calibrated at 60 here,
    would explore 120 candidates because the watch notes need them."""
    from django.test.utils import CaptureQueriesContext

    from memory import search
    from memory.models import SearchCalibration

    _fleet_memory()
    for kind, ef in (("learning", 60), ("veille", 120)):
        SearchCalibration.objects.create(
            kind=kind,
            model=HASHING.model,
            ef_search=ef,
            recall=0.97,
            target=0.95,
            reached=True,
            k=5,
            sample_size=200,
            vectors=10,
            measured_at=timezone.now(),
            measured_by="test",
        )
    search.forget_calibrations()
    try:
        with CaptureQueriesContext(connection) as queries:
            result = block()
    finally:
        search.forget_calibrations()  # this process must not go on reading the rows the test removes

    (sent,) = [q["sql"] for q in queries.captured_queries if "memory_learninginjection" in q["sql"]]
    statements = [part.strip() for part in sent.split(";\n")]
    depths = [(n, s) for n, s in enumerate(statements) if s.startswith("SET LOCAL hnsw.ef_search")]
    assert [s for _, s in depths] == ["SET LOCAL hnsw.ef_search = 60", "SET LOCAL hnsw.ef_search = 120"]
    learnings_at = next(n for n, s in enumerate(statements) if "memory_learninginjection" in s)
    veille_at = next(n for n, s in enumerate(statements) if "memory_veillenote" in s)
    assert depths[0][0] < learnings_at < depths[1][0] < veille_at
    assert len(section(result, "learnings")["items"]) == 5
    assert len(section(result, "veille")["items"]) == 3
