"""Filtered search returns what the filter allows (issue 34 point 2): an agent whose readable
learnings are few among many closer unreadable neighbours gets min(k, readable) of them, the
nearest first, in its search and in its step-0 block, as an exact filtered scan would."""

from __future__ import annotations

import pytest
from django.db import connection

from memory import indexing, search
from memory.models import Learning
from tests.factories.memory import LearningFactory
from tests.memory.test_injection import HASHING

pytestmark = pytest.mark.django_db

QUERY = "retry the flaky deploy"


@pytest.fixture(autouse=True)
def hashing_embeddings(settings):
    settings.DEBUG = True
    settings.EMBEDDING_BACKEND = "hashing"
    settings.EMBEDDING_DIMENSION = 64


def crowd(readable: int, unreadable: int = 2000) -> list[int]:
    """``unreadable`` learnings of domain rag (story scope: no seo agent reads them) nearer the query
    than ``readable`` ones of domain seo; returns the seo ones' ids."""
    LearningFactory.create_batch(unreadable, domain="rag", scope="story", text=f"{QUERY} now")
    seo = [
        LearningFactory.create(domain="seo", scope="story", text=f"{QUERY} for the seo shop audit {n} pages").pk
        for n in range(readable)
    ]
    indexing.embed("learning", list(Learning.objects.values_list("pk", flat=True)), backend=HASHING)
    return seo


def exact(k: int) -> list[float]:
    """The exact filtered scan: the similarities of the k nearest vectors seed 001's seo agent
    reads, over every vector, no index (ties at the k-th may be any of the tied rows)."""
    vector = search.vector_literal(HASHING.embed([QUERY])[0])
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT 1 - (e.embedding::vector(64) <=> %s::vector(64))
                 FROM memory_embedding e JOIN memory_learning l ON l.id = e.object_id
                 WHERE e.kind = 'learning' AND e.active AND lower(l.domain) = %s
                 ORDER BY (e.embedding::vector(64) <=> %s::vector(64)) + 0, e.object_id LIMIT %s""",
            [vector, "seo", vector, k],
        )
        return [row[0] for row in cursor.fetchall()]


@pytest.mark.parametrize("readable", [3, 5, 9])
def test_few_readable_learnings_among_many_closer_ones_are_all_found(vlevel, vlevel_api, readable):
    seo = crowd(readable)

    hits = vlevel_api.get("/memory/search", {"q": QUERY, "k": 5})
    block = vlevel_api.post(
        "/memory/injection-block", {"story": "PD-1", "domain": "seo", "project": "shop", "query_text": QUERY}
    )

    assert hits.status_code == 200
    found = [hit["id"] for hit in hits.json()]
    assert len(found) == min(5, readable)
    assert set(found) <= set(seo)
    assert [round(hit["score"], 4) for hit in hits.json()] == [round(sim, 4) for sim in exact(5)]
    served = [item["id"] for item in block.json()["sections"][0]["items"]]
    assert served == found


def test_the_search_statements_run_on_a_pgvector_older_than_0_8_too(vlevel, vlevel_api, monkeypatch):
    """Without iterative scans (an external server W006 warns about), no hnsw.iterative_scan is set
    and the exact scan completes the short walk."""
    seo = crowd(5, unreadable=300)
    monkeypatch.setattr(search, "iterative_scans", lambda: False)

    hits = vlevel_api.get("/memory/search", {"q": QUERY, "k": 5})

    assert sorted(hit["id"] for hit in hits.json()) == sorted(seo)


def test_one_subjects_memories_among_many_closer_subjects_are_all_found(monkeypatch):
    """A subject past the exact-scan bound walks the shared index with its own id as the filter:
    its 5 memories come back though 2,000 memories of other subjects are nearer the question."""
    import random

    from django.utils import timezone

    from memory.models import Embedding, SubjectMemory
    from memory.vector_index import DEFAULT_DIMENSION, create_index_sql
    from tests.factories.memory import EmbeddingFactory, SubjectFactory

    monkeypatch.setattr(search, "EXACT_UP_TO", 2)  # the index path, without 10,001 rows
    model = "subject-walk-test"
    rng = random.Random(7)

    def near(spread: float) -> list[float]:
        vector = [1.0] + [rng.gauss(0, spread) for _ in range(DEFAULT_DIMENSION - 1)]
        norm = sum(x * x for x in vector) ** 0.5
        return [x / norm for x in vector]

    with connection.cursor() as cursor:
        cursor.execute(create_index_sql("subject", model, DEFAULT_DIMENSION))
    crowd_subjects = SubjectFactory.create_batch(20)
    mine = SubjectFactory()
    own = SubjectMemory.objects.bulk_create(
        SubjectMemory(subject=mine, key=f"conv_{n}", type="event", text=f"m{n}", timestamp=timezone.now())
        for n in range(5)
    )
    rows = [
        EmbeddingFactory.build(
            kind="subject", object_id=10_000 + n, model=model, embedding=near(0.01), subject=crowd_subjects[n % 20]
        )
        for n in range(2000)
    ] + [
        EmbeddingFactory.build(kind="subject", object_id=m.pk, model=model, embedding=near(0.2), subject=mine)
        for m in own
    ]
    Embedding.objects.bulk_create(rows)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memory_embedding")

    query = [1.0] + [0.0] * (DEFAULT_DIMENSION - 1)
    hits = SubjectMemory.objects.nearest(query, model=model, dimension=DEFAULT_DIMENSION, subject_id=mine.pk, k=5)

    assert sorted(hit.object_id for hit in hits) == sorted(m.pk for m in own)
    assert [hit.similarity for hit in hits] == sorted((hit.similarity for hit in hits), reverse=True)
