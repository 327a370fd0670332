"""Memory router (/api/v1/memory): learnings, gate results, the injection block, search."""

from decimal import Decimal
from typing import Literal

from django.http import HttpRequest
from ninja import Query, Router, Status

from governance.kernel.access import agent_or_perm
from governance.kernel.exceptions import NotFound
from memory import injection, learnings, search
from memory.models import Clarification, Learning, ReuseScore, VeilleNote
from memory.notes_api import router as notes_router
from memory.schemas import GateResultIn, InjectionIn, InjectionOut, LearningCreated, LearningIn, LearningOut, SearchHit
from memory.subjects.api import router as subjects_router

router = Router(tags=["memory"])
router.add_router("", notes_router)
router.add_router("", subjects_router)


@router.post("/learnings", operation_id="create_learning", response={201: LearningCreated})
def create_learning(request: HttpRequest, data: LearningIn) -> Status:
    item = learnings.create_learning(actor=request.auth, **data.dict())
    return Status(201, {"id": item.pk, "tags_hash": item.tags_hash, "scope": item.scope})


@router.get("/learnings/{learning_id}", operation_id="get_learning", response=LearningOut)
def get_learning(request: HttpRequest, learning_id: int) -> dict:
    agent_or_perm(request.auth, "memory.view_learning")
    item = Learning.objects.filter(pk=learning_id).first()
    if item is None:
        raise NotFound(f"No learning {learning_id}.")
    score = (
        ReuseScore.objects.filter(story=item.story, gate=item.gate, tags_hash=item.tags_hash)
        .values_list("reuse_score", flat=True)
        .first()
    )
    return {
        **{f: getattr(item, f) for f in LearningOut.model_fields if f != "reuse_score"},
        "reuse_score": float(score or Decimal(0)),
    }


@router.post("/gate-results", operation_id="create_gate_result", response={201: dict})
def create_gate_result(request: HttpRequest, data: GateResultIn) -> Status:
    result = learnings.record_gate_result(actor=request.auth, **data.dict())
    return Status(201, {"id": result.pk, "story": result.story, "gate": result.gate, "verdict": result.verdict})


@router.post("/injection-block", operation_id="get_injection_block", response=InjectionOut)
def injection_block(request: HttpRequest, data: InjectionIn) -> dict:
    """Always 200: a failing source gives `_source indisponible_` in its section only."""
    return injection.build_block(actor=request.auth, **data.dict())


@router.get("/search", operation_id="search_memory", response=list[SearchHit])
def search_memory(
    request: HttpRequest,
    q: str = Query(..., min_length=1, max_length=10_000),
    kind: Literal["learning", "veille", "clarification"] = "learning",
    k: int = Query(5, ge=1, le=100),
    domain: str | None = None,
    project: str | None = None,
    impact: Literal["fort", "modere", "faible", "aucun"] | None = None,
    verdict: Literal["signal", "bruit", "veille"] | None = None,
) -> list[dict]:
    """Ranked hits with their cosine similarity as `score`."""
    from memory.embeddings import get_backend

    agent_or_perm(request.auth, "memory.view_learning")
    backend = get_backend()
    vector = backend.embed([q])[0]
    common = {"model": backend.model, "dimension": backend.dimension, "k": k}
    if kind == "learning":
        hits = search.nearest_learnings(vector, domain=domain, project=project, **common)
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
        hits = search.nearest_veille(vector, impacts=(impact,) if impact else None, verdict=verdict, **common)
        notes = VeilleNote.objects.in_bulk([h.object_id for h in hits])
        return [
            {
                "id": h.object_id,
                "kind": kind,
                "score": h.similarity,
                "title": notes[h.object_id].title,
                "text": notes[h.object_id].summary,
            }
            for h in hits
        ]
    hits = search.nearest_clarifications(vector, domain=domain, project=project, **common)
    answers = Clarification.objects.in_bulk([h.object_id for h in hits])
    return [
        {
            "id": h.object_id,
            "kind": kind,
            "score": h.similarity,
            "title": f"{answers[h.object_id].story} Q{answers[h.object_id].question_idx}",
            "text": answers[h.object_id].verbatim,
        }
        for h in hits
    ]
