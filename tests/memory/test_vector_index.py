"""The search query and the partial HNSW index agree (same cast, same WHERE), so PostgreSQL can
serve KNN from the index; archived rows are outside it."""

from __future__ import annotations

import random

import pytest
from django.db import connection

from memory.models import Embedding
from memory.search import _candidates_sql, vector_literal
from memory.vector_index import DEFAULT_DIMENSION, create_index_sql, index_name

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
        Embedding(
            kind="learning",
            object_id=n,
            model=MODEL,
            dimension=DEFAULT_DIMENSION,
            embedding=unit(rng),
            text_sha256="x",
        )
        for n in range(200)
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
    assert rows[0][1] >= rows[-1][1]  # best similarity first
