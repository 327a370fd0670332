"""Nearest-neighbour search over the embeddings table (pgvector HNSW; it replaces FAISS).

An HNSW index serves only `ORDER BY distance LIMIT n`, and a filter applied after it keeps only
what the first candidates hold: an agent whose readable learnings are few among many closer
unreadable ones got none (issue 34). So a learning search puts its filters (the reach, domain and
project) inside the index scan, and pgvector's iterative index scans (0.8+, ``hnsw.iterative_scan``)
walk the graph on until the rows asked for pass them (``learnings_sql``); the walk's relaxed order is
put right by sorting the rows again by distance. Where the walk still comes back with fewer than k
rows (a reach of fewer than k learnings, or readable ones beyond ``hnsw.max_scan_tuples``, or a
pgvector older than 0.8, which stops at ``ef_search`` candidates), an exact filtered scan answers
in the same statement. Watch notes keep the over-fetched candidate set (filtered by impact after
the KNN, TC-PLAN-04). The cast and WHERE are exactly those of the partial index
(memory/vector_index.py), or PostgreSQL would not use it.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from governance.kernel.access import agent_or_perm
from governance.kernel.exceptions import Forbidden, InvalidInput, Unavailable
from governance.kernel.principals import Principal
from memory.models import Clarification, Learning, VeilleNote
from memory.reach import EVERYTHING, Reach, reach_of

logger = logging.getLogger(__name__)

OVERFETCH = 8
MAX_EF_SEARCH = 1000
# How many index tuples an iterative scan visits at most before it gives up (pgvector's default);
# past it the exact scan answers. At 1M learnings over 50 domains, 20,000 tuples hold ~400 of one domain.
MAX_SCAN_TUPLES = 20_000
# Rows a filtered walk keeps per result asked for: a margin for the relaxed order and for ties at
# the k-th distance, which the seed's tie-breaks (score, date) then order.
WALK_PER_RESULT = 2


@dataclass(frozen=True)
class Hit:
    object_id: int
    similarity: float


@dataclass(frozen=True)
class LearningHit(Hit):
    reuse_score: Decimal
    date_created: date | None


def vector_literal(vector: list[float]) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


# What `tune_search` measured (memory.models.SearchCalibration), read by each process at most once a
# minute: a weekly measure needs no fresher copy, and the search's own statement keeps a constant LIMIT,
# which the planner needs to join the candidates by primary key (with an unknown one it expects a tenth
# of the table and hashes all of it).
CALIBRATION_TTL_SECONDS = 60.0
_calibrated: dict[tuple[str, str], int] = {}
_read_at: float | None = None


def calibrated_ef(kind: str, model: str) -> int | None:
    global _read_at
    if _read_at is None or time.monotonic() - _read_at > CALIBRATION_TTL_SECONDS:
        from memory.models import SearchCalibration

        rows = SearchCalibration.objects.values_list("kind", "model", "ef_search")
        fresh = {(kind_, model_): ef for kind_, model_, ef in rows}
        _calibrated.clear()
        _calibrated.update(fresh)
        _read_at = time.monotonic()
    return _calibrated.get((kind, model))


def forget_calibrations() -> None:
    """Read them again at the next search (after a new measure in this process)."""
    global _read_at
    _read_at = None


def candidate_count(kind: str, model: str, k: int = 5) -> int:
    """How many candidates a search of k results asks the index for: the ef_search `tune_search`
    measured for this kind and model, else MEMORY_SEARCH_CANDIDATES, never fewer than OVERFETCH per
    result."""
    measured = calibrated_ef(kind, model)
    return max(k * OVERFETCH, measured if measured is not None else settings.MEMORY_SEARCH_CANDIDATES)


def _candidates_sql(dimension: int, p: str = "") -> str:
    """The partial HNSW index's nearest rows, nearest first, with their cosine ``distance``; ``p``
    prefixes the parameter names, so that one statement can hold the candidates of several kinds (the
    injection block, memory/block_query.py).

    The outer queries sort by ``distance`` rather than by a similarity computed from it: the planner
    then knows the candidates arrive in that order, joins them one at a time and stops once the
    top k are complete (an incremental sort under the LIMIT). Sorting on ``1 - distance`` it must join
    and sort every candidate first: at 1M learnings that is ef_search (100-160) heap rows of embeddings,
    learnings and scores read for 5 results, the block's p95 on cold buffers."""
    d = int(dimension)
    return f"""
        SELECT object_id, embedding::vector({d}) <=> %({p}q)s::vector({d}) AS distance
          FROM memory_embedding
         WHERE kind = %({p}kind)s AND model = %({p}model)s AND active
         ORDER BY embedding::vector({d}) <=> %({p}q)s::vector({d})
         LIMIT %({p}candidates)s
    """


def ef_search(candidates: int) -> str:
    """The statement that lets the index return the candidates a search asks for (bounded both
    ways), for the rest of the transaction or until the next one."""
    return f"SET LOCAL hnsw.ef_search = {min(max(candidates, 40), MAX_EF_SEARCH)}"


_iterative: dict[str, bool] = {}


def iterative_scans() -> bool:
    """Whether the database's pgvector has iterative index scans (0.8+), read once per process and
    database alias. On an older one (an external server W006 warns about) a SET of
    ``hnsw.iterative_scan`` is an error (pgvector reserves the ``hnsw.`` prefix), so it is not sent,
    and the exact scan completes the short walks."""
    from governance.kernel import vector_extension

    alias = connection.alias
    if alias not in _iterative:
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
        _iterative[alias] = row is not None and not vector_extension.older(row[0], vector_extension.MINIMUM)
    return _iterative[alias]


def walk_settings() -> list[str]:
    """The statements that let a filtered index scan go on until its LIMIT is met (none before
    pgvector 0.8), for the rest of the transaction."""
    if not iterative_scans():
        return []
    return ["SET LOCAL hnsw.iterative_scan = relaxed_order", f"SET LOCAL hnsw.max_scan_tuples = {MAX_SCAN_TUPLES}"]


def run(sql: str, params: dict, *, walk: bool = False) -> list[tuple]:
    """The rows of one search statement, with the ef_search (and iterative-scan settings) it needs."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(ef_search(params["candidates"]))
        for statement in walk_settings() if walk else []:
            cursor.execute(statement)
        cursor.execute(sql, params)
        return cursor.fetchall()


def learnings_sql(dimension: int, p: str = "", columns: str = "") -> str:
    """Live learnings within a reach and the optional domain and project, nearest first, in the
    seed's order; ``columns`` adds learning columns (``l.``) to the id, similarity, score and date.

    ``walked``: the index scan of the partial index, each vector it hands over kept if its learning
    passes the filter (a correlated lookup by primary key, which PostgreSQL cannot turn into a join,
    so the plan stays the ordered index scan that an iterative scan walks on, `walk_settings`); a
    few rows per result. ``exact``: the same filter as a join over every vector, sorted, run only when
    the walk came back with fewer than k rows (a one-time filter: PostgreSQL does not start that
    scan otherwise). The rows of the one that answers are then sorted by distance again (a relaxed
    walk is only nearly in order) and by the seed's tie-breaks, their learnings read by primary key
    (``OFFSET 0`` keeps the lateral lookup from becoming a hash of the whole table)."""
    d = int(dimension)
    distance = f"e.embedding::vector({d}) <=> %({p}q)s::vector({d})"
    vectors = f"e.kind = %({p}kind)s AND e.model = %({p}model)s AND e.active"
    readable = f"""l.scope <> 'archived' AND l.held_at IS NULL
           AND (%({p}domain)s::text IS NULL OR l.domain = %({p}domain)s)
           AND (%({p}project)s::text IS NULL OR l.project = %({p}project)s)
           AND {_within_reach(p)}"""
    return f"""
        WITH walked AS MATERIALIZED (
            SELECT e.object_id, {distance} AS distance
              FROM memory_embedding e
             WHERE {vectors}
               AND (SELECT {readable} FROM memory_learning l WHERE l.id = e.object_id)
             ORDER BY {distance}
             LIMIT %({p}walk)s
        ), exact AS MATERIALIZED (
            SELECT e.object_id, {distance} AS distance
              FROM memory_embedding e JOIN memory_learning l ON l.id = e.object_id
             WHERE {vectors} AND {readable}
               AND (SELECT count(*) FROM walked) < %({p}k)s
             ORDER BY ({distance}) + 0  -- + 0: a sort, not the index
             LIMIT %({p}walk)s
        ), c AS (
            SELECT object_id, distance FROM walked WHERE (SELECT count(*) FROM walked) >= %({p}k)s
            UNION ALL
            SELECT object_id, distance FROM exact
        )
        SELECT l.id, 1 - c.distance AS similarity, COALESCE(s.reuse_score, 0) AS score, l.date_created{columns}
          FROM c
         CROSS JOIN LATERAL (SELECT * FROM memory_learning l WHERE l.id = c.object_id OFFSET 0) l
          LEFT JOIN memory_reusescore s
                 ON s.story = l.story AND s.gate = l.gate AND s.tags_hash = l.tags_hash
         ORDER BY c.distance, score DESC, l.date_created DESC NULLS LAST, l.id DESC
         LIMIT %({p}k)s
    """


def _within_reach(p: str = "") -> str:
    """The SQL condition on a learning ``l`` that keeps what a reach reads (memory/reach.py)."""
    return f"""(%({p}own)s::text IS NULL OR lower(l.domain) = %({p}own)s
                OR (%({p}shared)s AND l.scope <> 'story'
                    AND (%({p}shared_domains)s::text[] IS NULL
                         OR lower(l.domain) = ANY(%({p}shared_domains)s::text[]))))"""


def _reach_params(reach: Reach) -> dict[str, Any]:
    return {
        "own": reach.own,
        "shared": reach.shared,
        "shared_domains": list(reach.shared_domains) if reach.shared_domains else None,
    }


def story_learnings_sql(p: str = "", columns: str = "") -> str:
    """Without a query to embed (the block's empty query text, issue 34): the live learnings of the
    block's domain within a reach, in the seed's order with the story in place of the similarity it
    cannot measure: the block's story's own first, then reuse score (missing = 0.0), then newest.
    Their similarity is 0.0 (none was measured). Same columns as `learnings_sql`."""
    return f"""
        SELECT l.id, 0.0::float8 AS similarity, COALESCE(s.reuse_score, 0) AS score, l.date_created{columns}
          FROM memory_learning l
          LEFT JOIN memory_reusescore s
                 ON s.story = l.story AND s.gate = l.gate AND s.tags_hash = l.tags_hash
         WHERE l.scope <> 'archived' AND l.held_at IS NULL AND lower(l.domain) = lower(%({p}block_domain)s)
           AND {_within_reach(p)}
         ORDER BY (l.story = %({p}story)s) DESC, score DESC, l.date_created DESC NULLS LAST, l.id DESC
         LIMIT %({p}k)s
    """


def story_learnings_params(*, story: str, domain: str, k: int, reach: Reach, p: str = "") -> dict[str, Any]:
    values = {"story": story, "block_domain": domain, "k": k, **_reach_params(reach)}
    return {p + name: value for name, value in values.items()}


def story_learnings(*, story: str, domain: str, k: int = 5, reach: Reach = EVERYTHING) -> list[LearningHit]:
    """`story_learnings_sql`'s hits (the block's section-by-section path)."""
    with connection.cursor() as cursor:
        cursor.execute(story_learnings_sql(), story_learnings_params(story=story, domain=domain, k=k, reach=reach))
        return [LearningHit(pk, sim, Decimal(score), created) for pk, sim, score, created in cursor.fetchall()]


def latest_veille_sql(p: str = "", columns: str = "") -> str:
    """Without a query to embed: the newest watch notes of the impacts asked for (the order
    `veille_sql` uses after the similarity), similarity 0.0."""
    return f"""
        SELECT v.id, 0.0::float8 AS similarity{columns}
          FROM memory_veillenote v
         WHERE v.held_at IS NULL AND (%({p}impacts)s::text[] IS NULL OR v.impact_pv = ANY(%({p}impacts)s::text[]))
         ORDER BY v.date DESC, v.id DESC
         LIMIT %({p}k)s
    """


def latest_veille(*, k: int = 3, impacts: tuple[str, ...] | None = None) -> list[Hit]:
    with connection.cursor() as cursor:
        cursor.execute(latest_veille_sql(), {"impacts": list(impacts) if impacts else None, "k": k})
        return [Hit(pk, sim) for pk, sim in cursor.fetchall()]


def learnings_params(
    q: str, *, model: str, k: int, domain: str | None, project: str | None, reach: Reach, p: str = ""
) -> dict[str, Any]:
    """The parameters of `learnings_sql` (``q``: the query vector as a pgvector literal)."""
    values = {
        "q": q,
        "kind": "learning",
        "model": model,
        "candidates": candidate_count("learning", model, k),
        "domain": domain,
        "project": project,
        **_reach_params(reach),
        "k": k,
        "walk": k * WALK_PER_RESULT,
    }
    return {p + name: value for name, value in values.items()}


def veille_sql(dimension: int, p: str = "", columns: str = "") -> str:
    """Watch notes among the candidates, filtered by impact, verdict and tags, in the seed's order;
    ``columns`` adds note columns (``v.``) to the id and similarity."""
    return f"""
        WITH c AS ({_candidates_sql(dimension, p)})
        SELECT v.id, 1 - c.distance AS similarity{columns}
          FROM c JOIN memory_veillenote v ON v.id = c.object_id
         WHERE v.held_at IS NULL AND (%({p}impacts)s::text[] IS NULL OR v.impact_pv = ANY(%({p}impacts)s::text[]))
           AND (%({p}verdict)s::text IS NULL OR v.verdict_veille = %({p}verdict)s)
           AND (%({p}tags)s::text[] IS NULL OR ARRAY(
                SELECT lower(t) FROM jsonb_array_elements_text(v.tags) t) @> %({p}tags)s::text[])
         ORDER BY c.distance, v.date DESC, v.id DESC
         LIMIT %({p}k)s
    """


def veille_params(
    q: str,
    *,
    model: str,
    k: int,
    impacts: tuple[str, ...] | None = None,
    verdict: str | None = None,
    tags: list[str] | None = None,
    p: str = "",
) -> dict[str, Any]:
    """The parameters of `veille_sql` (``q``: the query vector as a pgvector literal)."""
    values = {
        "q": q,
        "kind": "veille",
        "model": model,
        "candidates": candidate_count("veille", model, k),
        "impacts": list(impacts) if impacts else None,
        "verdict": verdict,
        "tags": [tag.strip().lower() for tag in tags] if tags else None,
        "k": k,
    }
    return {p + name: value for name, value in values.items()}


def clarifications_sql(dimension: int) -> str:
    """Clarifications nearest the query, filtered by domain and project after the candidates."""
    return f"""
        WITH c AS ({_candidates_sql(dimension)})
        SELECT a.id, 1 - c.distance AS similarity
          FROM c JOIN memory_clarification a ON a.id = c.object_id
         WHERE (%(domain)s::text IS NULL OR a.domain = %(domain)s)
           AND (%(project)s::text IS NULL OR a.project = %(project)s)
         ORDER BY c.distance, a.date DESC, a.id DESC
         LIMIT %(k)s
    """


def clarifications_params(
    vector: str, *, model: str, k: int, domain: str | None, project: str | None
) -> dict[str, Any]:
    return {
        "q": vector,
        "kind": "clarification",
        "model": model,
        "candidates": candidate_count("learning", model, k),
        "domain": domain,
        "project": project,
        "k": k,
    }


# Per-subject memories share one HNSW index across subjects. A subject with up to EXACT_UP_TO rows
# is scanned exactly through the subject index (a few ms, exact recall); a larger one walks the index
# with its subject as the filter (an iterative scan, pgvector 0.8+; SUBJECT_CANDIDATES is the walk's
# ef_search), falling back to the exact scan when fewer than k come back (before 0.8, or a question
# far from everything the subject holds). bench/README.md, subjects.
EXACT_UP_TO = 10_000
SUBJECT_CANDIDATES = 400

# How big a subject is, from its memories' (subject, key) index alone (an index-only scan):
# counting its vectors would visit up to EXACT_UP_TO heap rows just to decide.
SUBJECT_SIZE_SQL = (
    "SELECT count(*) FROM (SELECT 1 FROM memory_subjectmemory WHERE subject_id = %(subject)s LIMIT %(bound)s) b"
)


def subject_params(vector: str, *, model: str, subject_id: int, k: int) -> dict[str, Any]:
    return {
        "q": vector,
        "kind": "subject",
        "model": model,
        "subject": subject_id,
        "k": k,
        "candidates": SUBJECT_CANDIDATES,
        "bound": EXACT_UP_TO + 1,
        "walk": k * WALK_PER_RESULT,
    }


def subject_walk_sql(dimension: int) -> str:
    """A large subject: the subject filter inside the index scan, walked on until k rows pass
    (pgvector 0.8+), then sorted again by distance (a relaxed walk is only nearly in order)."""
    d = int(dimension)
    return f"""
        WITH walked AS MATERIALIZED (
            SELECT object_id, embedding::vector({d}) <=> %(q)s::vector({d}) AS distance
              FROM memory_embedding
             WHERE kind = %(kind)s AND model = %(model)s AND active AND subject_id = %(subject)s
             ORDER BY embedding::vector({d}) <=> %(q)s::vector({d})
             LIMIT %(walk)s
        )
        SELECT object_id, 1 - distance AS similarity FROM walked ORDER BY distance, object_id LIMIT %(k)s
    """


def subject_exact_sql(dimension: int) -> str:
    """A small subject (or a walk that came back short): an exact scan of its rows."""
    d = int(dimension)
    return f"""
        SELECT object_id, 1 - (embedding::vector({d}) <=> %(q)s::vector({d})) AS similarity
          FROM memory_embedding
         WHERE subject_id = %(subject)s AND kind = %(kind)s AND model = %(model)s AND active
         ORDER BY (embedding::vector({d}) <=> %(q)s::vector({d})) + 0, object_id  -- + 0: a sort, not the index
         LIMIT %(k)s
    """


def embed_query(q: str) -> tuple[list[float], Any]:
    """The query's vector and the backend that made it; an embedder that cannot answer is a 503
    (``Unavailable``) for the caller, its reason logged, never shown (it names hosts)."""
    from memory.embeddings import EmbeddingError, get_backend

    backend = get_backend()
    try:
        return backend.embed([q])[0], backend
    except EmbeddingError as exc:
        logger.warning("[search] the embedding backend failed: %s", exc)
        raise Unavailable("The embedding backend is unavailable; retry later.") from exc


def search_memory(
    principal: Principal,
    *,
    q: str,
    kind: str = "learning",
    k: int = 5,
    domain: str | None = None,
    project: str | None = None,
    impact: str | None = None,
    verdict: str | None = None,
    tags: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Ranked hits with their cosine similarity as ``score`` (the REST endpoint and the MCP tool).
    An agent finds the learnings its manifest's memory reaches, and none without long-term memory
    (403, before anything is embedded)."""
    agent_or_perm(principal, "memory.view_learning")
    reach = reach_of(principal)
    if kind == "learning" and not reach.long_term:
        raise Forbidden(f"The active manifest of {principal.label} does not enable memory.long_term.")
    if tags and kind != "veille":
        msg = "tags filter watch notes: search them with kind=veille"
        raise InvalidInput(msg, errors=[{"loc": ["query", "tags"], "msg": msg, "type": "value_error"}])
    vector, backend = embed_query(q)
    common: dict[str, Any] = {"model": backend.model, "dimension": backend.dimension, "k": k}
    if kind == "learning":
        hits = Learning.objects.nearest(vector, domain=domain, project=project, reach=reach, **common)
        rows = Learning.objects.in_bulk([h.object_id for h in hits])
        return [
            {
                "id": h.object_id,
                "kind": kind,
                "score": h.similarity,
                "title": f"{rows[h.object_id].story} gate {rows[h.object_id].gate}",
                "text": rows[h.object_id].text,
            }
            for h in hits
        ]
    if kind == "veille":
        notes_hits = VeilleNote.objects.nearest(
            vector, impacts=(impact,) if impact else None, verdict=verdict, tags=tags, **common
        )
        notes = VeilleNote.objects.in_bulk([h.object_id for h in notes_hits])
        return [
            {
                "id": h.object_id,
                "kind": kind,
                "score": h.similarity,
                "title": notes[h.object_id].title,
                "text": notes[h.object_id].summary,
            }
            for h in notes_hits
        ]
    answer_hits = Clarification.objects.nearest(vector, domain=domain, project=project, **common)
    answers = Clarification.objects.in_bulk([h.object_id for h in answer_hits])
    return [
        {
            "id": h.object_id,
            "kind": kind,
            "score": h.similarity,
            "title": f"{answers[h.object_id].story} Q{answers[h.object_id].question_idx}",
            "text": answers[h.object_id].verbatim,
        }
        for h in answer_hits
    ]
