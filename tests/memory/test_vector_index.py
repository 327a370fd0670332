"""The search query and the partial HNSW index agree (same cast, same WHERE), so PostgreSQL can
serve KNN from the index; archived rows are outside it."""

from __future__ import annotations

import random
import time
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from memory.models import Embedding
from memory.search import _candidates_sql, vector_literal
from memory.vector_index import DEFAULT_DIMENSION, create_index_sql, index_name
from tests.factories.memory import EmbeddingFactory

# Its own model and index (made by the same SQL as the migrations', rolled back with the test): rows put in
# the shipped model's index would stay there as dead entries and crowd other tests' searches.
MODEL = "index-test"


def unit(rng: random.Random) -> list[float]:
    vector = [rng.gauss(0, 1) for _ in range(DEFAULT_DIMENSION)]
    norm = sum(x * x for x in vector) ** 0.5
    return [x / norm for x in vector]


@pytest.mark.django_db
def test_the_knn_query_uses_the_partial_hnsw_index_of_its_kind_and_model():
    rng = random.Random(1)
    with connection.cursor() as cursor:
        cursor.execute(create_index_sql("learning", MODEL, DEFAULT_DIMENSION))
    Embedding.objects.bulk_create(
        EmbeddingFactory.build(object_id=n, model=MODEL, embedding=unit(rng)) for n in range(200)
    )
    sql = _candidates_sql(DEFAULT_DIMENSION)
    params = {"q": vector_literal(unit(rng)), "kind": "learning", "model": MODEL, "candidates": 40}
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute(sql, params)
        rows = cursor.fetchall()

    assert index_name("learning", MODEL) in plan
    assert len(rows) == 40
    assert [row[1] for row in rows] == sorted(row[1] for row in rows)  # nearest first


def _insert(cursor, model: str, object_id: int, rng: random.Random) -> None:
    cursor.execute(
        """INSERT INTO memory_embedding (kind, object_id, model, dimension, embedding, text_sha256, active, created_at)
           VALUES ('learning', %s, %s, %s, %s::vector, 'x', true, now())""",
        [object_id, model, DEFAULT_DIMENSION, vector_literal(unit(rng))],
    )


@pytest.mark.django_db(transaction=True)
def test_a_new_models_index_is_built_on_the_live_table_without_holding_its_writers():
    """A plain CREATE INDEX queues behind an open writer and every later writer queues behind it; the
    concurrent build lets them through, and waits for the open writer only to finish its own work."""
    import threading

    import psycopg

    from memory import indexing

    model = "live-build"
    rng = random.Random(3)
    with connection.cursor() as cursor:
        for n in range(50):
            _insert(cursor, model, n, rng)
    params = connection.get_connection_params()
    in_flight = psycopg.connect(**params)  # an embedding batch that has written and not committed yet
    with in_flight.cursor() as cursor:
        _insert(cursor, model, 1000, rng)

    built: list[bool] = []

    def build() -> None:
        try:
            built.append(indexing.build_index("learning", model, DEFAULT_DIMENSION))
        finally:
            connection.close()

    builder = threading.Thread(target=build)
    builder.start()
    try:
        with psycopg.connect(**params, autocommit=True) as watcher:
            waiting = None
            for _ in range(100):
                waiting = watcher.execute(
                    "SELECT wait_event_type FROM pg_stat_activity WHERE query LIKE 'CREATE INDEX%%live_build%%'"
                ).fetchone()
                if waiting and waiting[0] == "Lock":
                    break
                time.sleep(0.05)
            assert waiting == ("Lock",)  # the build has started, and waits for the batch in flight
            with psycopg.connect(**params, autocommit=True) as writer:
                writer.execute("SET lock_timeout = '2s'")
                _insert(writer.cursor(), model, 2000, rng)  # a plain build would make this wait, then fail
    finally:
        in_flight.commit()
        in_flight.close()
        builder.join(timeout=60)

    assert built == [True]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid WHERE c.relname = %s",
            [index_name("learning", model)],
        )
        assert cursor.fetchone() == (True,)
        cursor.execute("SELECT count(*) FROM memory_embedding WHERE model = %s", [model])
        assert cursor.fetchone() == (52,)
        cursor.execute(f"DROP INDEX {index_name('learning', model)}")  # a transactional test leaves no schema behind
    assert indexing.build_index("learning", model, DEFAULT_DIMENSION) is True
    assert indexing.build_index("learning", model, DEFAULT_DIMENSION) is False  # valid: left alone
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX {index_name('learning', model)}")


def _options(cursor, name: str) -> tuple[set[str], bool] | None:
    cursor.execute(
        "SELECT c.reloptions, i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid"
        " WHERE c.relname = %s",
        [name],
    )
    found = cursor.fetchone()
    return None if found is None else (set(found[0] or []), found[1])


@pytest.mark.django_db(transaction=True)
def test_an_index_built_with_the_old_graph_options_is_rebuilt_under_its_name():
    """An upgraded database (migration memory 0015): an index of the old m 16 / ef_construction 64
    gets the shipped graph and keeps its name and definition; a current one is left alone."""
    from memory import indexing
    from memory.vector_index import HNSW_EF_CONSTRUCTION, HNSW_M, hnsw_options

    model, rng = "old-graph", random.Random(5)
    name = index_name("learning", model)
    current = index_name("learning", "all-MiniLM-L6-v2")
    with connection.cursor() as cursor:
        for n in range(60):
            _insert(cursor, model, n, rng)
        old = create_index_sql("learning", model, DEFAULT_DIMENSION)
        cursor.execute(old.replace(hnsw_options(), "WITH (m = 16, ef_construction = 64)"))
        assert _options(cursor, name) == ({"m=16", "ef_construction=64"}, True)
        cursor.execute("SELECT pg_get_indexdef(%s::regclass)", [name])
        before = cursor.fetchone()[0]  # the same cast and WHERE after: the searches' index still
    try:
        out = StringIO()
        call_command("rebuild_vector_indexes", stdout=out)  # the operator's way to rebuild_outdated
        assert f"rebuilt {name} " in out.getvalue()
        assert "1 index(es) rebuilt" in out.getvalue()
        with connection.cursor() as cursor:
            assert _options(cursor, name) == ({f"m={HNSW_M}", f"ef_construction={HNSW_EF_CONSTRUCTION}"}, True)
            assert _options(cursor, f"{name}_rebuild") is None
            assert _options(cursor, current) == ({f"m={HNSW_M}", f"ef_construction={HNSW_EF_CONSTRUCTION}"}, True)
            cursor.execute("SELECT pg_get_indexdef(%s::regclass)", [name])
            assert cursor.fetchone()[0] == before.replace(
                "m='16', ef_construction='64'", "m='24', ef_construction='128'"
            )
        assert indexing.rebuild_outdated() == []  # nothing left to do
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP INDEX IF EXISTS {name}")
            cursor.execute("DELETE FROM memory_embedding WHERE model = %s", [model])


@pytest.mark.django_db
def test_rebuilding_refuses_to_run_inside_a_transaction():
    from memory import indexing

    with pytest.raises(RuntimeError, match="outside a transaction"):
        indexing.rebuild_outdated()


def _plan_nodes(node: dict) -> list[dict]:
    return [node, *(child for sub in node.get("Plans", []) for child in _plan_nodes(sub))]


@pytest.mark.django_db
def test_the_learnings_search_reads_only_the_candidates_it_needs_and_keeps_the_seeds_order():
    """The index hands over its rows nearest first; the search filters them one at a time by their
    learning and stops once it holds 2k, ties at the kth place included: the eight learnings sharing
    the nearest vector are ranked by reuse score."""
    from decimal import Decimal

    from memory.reach import EVERYTHING
    from memory.search import learnings_params, learnings_sql
    from tests.factories.memory import LearningFactory, ReuseScoreFactory

    rng = random.Random(5)
    with connection.cursor() as cursor:
        cursor.execute(create_index_sql("learning", MODEL, DEFAULT_DIMENSION))
    query = unit(rng)
    twins = [LearningFactory.create(story=f"PD-T{n}", tags=[f"#t{n}"]) for n in range(8)]
    for n, item in enumerate(twins):
        ReuseScoreFactory(story=item.story, gate=item.gate, tags_hash=item.tags_hash, reuse_score=Decimal(n) / 10)
    others = [LearningFactory.create(story=f"PD-O{n}") for n in range(300)]
    Embedding.objects.bulk_create(
        [EmbeddingFactory.build(object_id=item.pk, model=MODEL, embedding=query) for item in twins]
        + [EmbeddingFactory.build(object_id=item.pk, model=MODEL, embedding=unit(rng)) for item in others]
    )
    params = learnings_params(vector_literal(query), model=MODEL, k=5, domain=None, project=None, reach=EVERYTHING) | {
        "candidates": 200
    }
    with connection.cursor() as cursor:
        # The plan is chosen by cost: statistics left by an earlier test (an emptied table analyzed)
        # make hashing the whole 300-row table look cheaper than 9 lookups. Real ones, as autovacuum
        # keeps them, give the plan a grown table gets.
        cursor.execute("ANALYZE memory_learning, memory_embedding, memory_reusescore")
        cursor.execute("SET LOCAL hnsw.ef_search = 200")
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + learnings_sql(DEFAULT_DIMENSION), params)
        [[plan]] = cursor.fetchone()
        cursor.execute(learnings_sql(DEFAULT_DIMENSION), params)
        rows = cursor.fetchall()

    assert [row[0] for row in rows] == [item.pk for item in reversed(twins)][:5]  # best reuse score first
    assert [float(row[2]) for row in rows] == [0.7, 0.6, 0.5, 0.4, 0.3]
    learning_reads = [node for node in _plan_nodes(plan["Plan"]) if node.get("Relation Name") == "memory_learning"]
    assert learning_reads, "the plan reads memory_learning"
    # The walk's filter looks up one learning per vector the index hands over until 2k pass (all do
    # here), and the rows kept are read again for their columns: 2 x 10, not the 200 the index was
    # asked for, nor the table.
    assert sum(node["Actual Loops"] * max(1, node["Actual Rows"]) for node in learning_reads) <= 2 * 2 * 5
