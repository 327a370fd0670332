"""Self-calibrating search: how much of the HNSW graph a search must walk to find what an exact scan finds.

The recall an `ef_search` gives depends on the data: 80 candidates found 0.99 of the true top 5 at 100k
learnings and 0.80 at a million (bench/README.md, memory). So it is measured, not guessed: a sample of
the stored vectors is searched exactly (a sequential scan) and through the index at growing `ef_search`,
and the lowest one whose recall@k reaches MEMORY_SEARCH_RECALL_TARGET is recorded per (kind, model).
Each process reads it again at most a minute later (memory/search.py).

"Reaches" means with 95 % confidence: the lower bound of the sample's mean, not the mean itself. At a
million learnings the recall of single queries ranges from 2 in 5 to 5 in 5, and two samples of 200
measured 0.934 and 0.960 at the same ef_search (bench/README.md): taking the mean, the finer steps let
a lucky sample pick an ef_search that serves 0.93. Stored vectors are also easier queries than new
texts (each is a node of the graph), which the bound's margin covers too.
"""

from __future__ import annotations

import logging
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Forbidden
from governance.kernel.principals import Principal
from governance.kernel.services import record
from memory import search
from memory.models import SearchCalibration
from memory.search import MAX_EF_SEARCH, forget_calibrations

logger = logging.getLogger(__name__)

# What is tried, lowest first; the search never goes above MAX_EF_SEARCH. Steps of 20 to 40 where a
# million learnings cross 0.95 (between 100 and 200 on the bench's graphs, bench/README.md): a coarser
# step there overshoots by a third, and the block pays it on every call.
EF_STEPS = (40, 60, 80, 100, 120, 140, 160, 200, 240, 320, 480, 640, MAX_EF_SEARCH)
KINDS = ("learning", "veille", "clarification")  # what the shared index serves (subjects have their own path)
SAMPLE = 200
K = 5
Z_ONE_SIDED_95 = 1.645


@dataclass(frozen=True)
class Point:
    """The recall measured at one ef_search: the sample's mean and its one-sided 95 % lower bound."""

    ef_search: int
    recall: float
    low: float


def recall_at_k(found: Sequence[Sequence[int]], exact: Sequence[Sequence[int]], k: int) -> tuple[float, float]:
    """Pure: (mean, lower bound) of the share of each query's exact top k that the index also returned;
    the bound is the mean less 1.645 standard errors (the mean itself below two queries)."""
    if not exact:
        return 1.0, 1.0
    shares = [len(set(f[:k]) & set(e[:k])) / max(1, min(k, len(e))) for f, e in zip(found, exact, strict=True)]
    mean = statistics.fmean(shares)
    if len(shares) < 2:
        return mean, mean
    return mean, mean - Z_ONE_SIDED_95 * statistics.stdev(shares, mean) / math.sqrt(len(shares))


def lowest_reaching(curve: Sequence[Point], target: float) -> tuple[Point, bool]:
    """Pure: the first point of the curve whose lower bound is at or above ``target``, else the best
    tried (highest bound, then lowest ef_search)."""
    for point in curve:
        if point.low >= target:
            return point, True
    return max(curve, key=lambda point: (point.low, -point.ef_search)), False


@dataclass(frozen=True)
class Space:
    """One (kind, model) of the embeddings table, with its dimension and size."""

    kind: str
    model: str
    dimension: int
    vectors: int


def spaces(kinds: Sequence[str] = KINDS) -> list[Space]:
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT kind, model, min(dimension), count(*) FROM memory_embedding
                WHERE active AND kind = ANY(%s) GROUP BY kind, model ORDER BY kind, model""",
            [list(kinds)],
        )
        return [Space(*row) for row in cursor.fetchall()]


def _neighbours(space: Space, queries: list[tuple[int, str]], k: int, ef: int | None) -> list[list[int]]:
    """Each query's top k other than itself: through the index at ``ef``, or exactly (``ef`` None: `+ 0`
    keeps the planner off the index, so PostgreSQL sorts every row). A stored vector finds itself first
    whatever the graph, so counting it would flatter the recall by one hit in k."""
    d = int(space.dimension)
    distance = f"embedding::vector({d}) <=> %(q)s::vector({d})"
    order = distance if ef is not None else f"({distance}) + 0"
    sql = f"""SELECT object_id FROM memory_embedding
               WHERE kind = %(kind)s AND model = %(model)s AND active
               ORDER BY {order} LIMIT %(limit)s"""
    found = []
    with transaction.atomic(), connection.cursor() as cursor:
        if ef is not None:
            cursor.execute(search.ef_search(ef))
        for own_id, q in queries:
            cursor.execute(sql, {"q": q, "kind": space.kind, "model": space.model, "limit": k + 1})
            found.append([row[0] for row in cursor.fetchall() if row[0] != own_id][:k])
    return found


def measure(space: Space, *, sample: int = SAMPLE, k: int = K, target: float) -> list[Point]:
    """The recall curve of ``space``: stored vectors as queries, ef_search rising until the target is met."""
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT object_id, embedding::text FROM memory_embedding
                WHERE kind = %s AND model = %s AND active ORDER BY random() LIMIT %s""",
            [space.kind, space.model, sample],
        )
        queries = [(own_id, q) for own_id, q in cursor.fetchall()]
    exact = _neighbours(space, queries, k, None)
    curve = []
    for ef in EF_STEPS:
        curve.append(Point(ef, *recall_at_k(_neighbours(space, queries, k, ef), exact, k)))
        if curve[-1].low >= target:
            break
    return curve


def tune(
    *, actor: Principal, kinds: Sequence[str] = KINDS, sample: int = SAMPLE, target: float | None = None
) -> list[SearchCalibration]:
    """Measure every (kind, model) with vectors and record what searches use from now on."""
    if actor.is_agent or (actor.is_operator and not actor.has_perm("memory.change_searchcalibration")):
        raise Forbidden("Tuning the search needs the memory.change_searchcalibration permission.")
    goal = settings.MEMORY_SEARCH_RECALL_TARGET if target is None else target
    if not 0 < goal <= 1:
        raise ValueError("the recall target must be in (0, 1]")
    results = []
    for space in spaces(kinds):
        curve = measure(space, sample=sample, target=goal)
        chosen, reached = lowest_reaching(curve, goal)
        ef, recall = chosen.ef_search, chosen.recall
        if not reached:
            logger.warning(
                "[tune_search] %s/%s: recall@%s %.3f (95%% lower bound %.3f) at ef_search %s, short of %.2f",
                *(space.kind, space.model, K, recall, chosen.low, ef, goal),
            )
        with transaction.atomic(durable=True):
            calibration, _ = SearchCalibration.objects.update_or_create(
                kind=space.kind,
                model=space.model,
                defaults={
                    "ef_search": ef,
                    "recall": recall,
                    "target": goal,
                    "reached": reached,
                    "k": K,
                    "sample_size": min(sample, space.vectors),
                    "vectors": space.vectors,
                    "curve": [
                        {"ef_search": p.ef_search, "recall": round(p.recall, 4), "low": round(p.low, 4)} for p in curve
                    ],
                    "measured_at": timezone.now(),
                    "measured_by": actor.label,
                },
            )
            record(
                actor=actor,
                action=AuditAction.SEARCH_CALIBRATED,
                target=calibration,
                ef_search=ef,
                recall=round(recall, 4),
                target_recall=goal,
                reached=reached,
            )
            transaction.on_commit(forget_calibrations)  # this process's next search uses it; others within a minute
        results.append(calibration)
    return results
