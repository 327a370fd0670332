"""Scheduled maintenance of agent memory (each also a management command)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from celery import shared_task

from governance.kernel.periodic import Failures
from governance.kernel.principals import SYSTEM
from memory import calibration, indexing, lifecycle, scoring
from memory.embeddings import DimensionMismatch, EmbeddingError


@shared_task(name="memory.compute_reuse_scores", ignore_result=True)
def compute_reuse_scores(full: bool = False) -> dict:
    return asdict(scoring.compute_reuse_scores(full=full))


@shared_task(name="memory.full_scoring", ignore_result=True)
def full_scoring() -> dict:
    """Weekly: every key recomputed, and what the incremental runs had wrong counted on the
    ScoringRun row and logged as a warning (memory.scoring)."""
    return asdict(scoring.compute_reuse_scores(full=True))


@shared_task(name="memory.tune_search", ignore_result=True)
def tune_search() -> list[dict]:
    """Weekly: the data moves, and with it the ef_search that reaches the recall target."""
    return [
        {"kind": row.kind, "model": row.model, "ef_search": row.ef_search, "recall": row.recall}
        for row in calibration.tune(actor=SYSTEM)
    ]


@shared_task(name="memory.promote", ignore_result=True)
def promote() -> dict:
    """Scores first, so proposals see today's injections and gate results."""
    scoring.compute_reuse_scores()
    return asdict(lifecycle.propose_promotions())


@shared_task(name="memory.evict", ignore_result=True)
def evict() -> dict:
    return asdict(lifecycle.evict())


@shared_task(
    name="memory.embed",
    ignore_result=True,
    autoretry_for=(EmbeddingError, ConnectionError),
    dont_autoretry_for=(DimensionMismatch,),
    retry_backoff=True,
    retry_jitter=True,
    max_retries=5,
)
def embed(kind: str, object_ids: list[int]) -> int:
    """Retried when the backend is down or refuses (an Ollama or OpenAI outage): the vectors are
    computed again only for rows whose text has no current vector, so a redelivery is harmless. A
    dimension mismatch is a configuration error: retrying would fail the same way."""
    return indexing.embed(kind, object_ids)


@shared_task(name="memory.embed_missing", ignore_result=True)
def embed_missing() -> dict[str, Any]:
    """Catch up on rows whose embedding was never scheduled (broker outage, model change). A kind
    whose catch-up fails (a text its backend refuses) is reported under ``errors``, and the other
    kinds are embedded all the same."""
    from memory.embeddings import get_backend

    backend = get_backend()
    counts: dict[str, Any] = {}
    failures = Failures("embeddings")
    for kind in indexing.MODELS:
        with failures.guard(f"{kind} embeddings"):
            counts[kind] = indexing.embed(kind, indexing.missing(kind, backend.model), backend=backend)
    return {**counts, **failures.as_dict()}
