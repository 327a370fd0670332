"""Memory router, learnings (mounted at /api/v1/memory): learnings, gate results, the injection block, search."""

from decimal import Decimal

from django.http import HttpRequest
from ninja import Query, Router, Status

from governance.kernel.access import visible
from governance.kernel.auth import caller
from memory import injection, learnings, reach, search
from memory.models import Learning, ReuseScore
from memory.schemas import (
    GateResultIn,
    GateResultOut,
    InjectionIn,
    InjectionOut,
    LearningCreated,
    LearningIn,
    LearningOut,
    SearchHit,
    SearchQuery,
)

router = Router(tags=["memory"])


@router.post("/learnings", operation_id="create_learning", response={201: LearningCreated})
def create_learning(request: HttpRequest, data: LearningIn) -> Status:
    """A new learning in a domain the agent's manifest lets it write into (else 403, audited,
    nothing written). An agent's text that addresses the model is stored held: `held` says so.
    `warnings` says at once when no agent reads the domain (it would never be served)."""
    item = learnings.create_learning(actor=caller(request), **data.dict())
    held = {"held": item.held_at is not None, "held_reasons": item.held_reasons}
    warnings = [warning for warning in [reach.unread_warning(item.domain)] if warning]
    return Status(201, {"id": item.pk, "tags_hash": item.tags_hash, "scope": item.scope, **held, "warnings": warnings})


@router.get("/learnings/{learning_id}", operation_id="get_learning", response=LearningOut)
def get_learning(request: HttpRequest, learning_id: int) -> dict:
    """One learning: an agent reads those within its manifest's memory reach, as in its searches
    (any other is 404, as an unknown id); operators need `memory.view_learning`."""
    item = visible(caller(request), Learning.objects.select_related("author"), learning_id, what="learning")
    assert isinstance(item, Learning)
    score = (
        ReuseScore.objects.filter(story=item.story, gate=item.gate, tags_hash=item.tags_hash)
        .values_list("reuse_score", flat=True)
        .first()
    )
    derived = {"reuse_score", "author", "job", "session", "held"}
    return {
        **{f: getattr(item, f) for f in LearningOut.model_fields if f not in derived},
        "reuse_score": float(score or Decimal(0)),
        "author": item.author.agent_id if item.author else None,
        "job": item.job_id,
        "session": item.session_id,
        "held": item.held_at is not None,
    }


@router.post("/gate-results", operation_id="create_gate_result", response={201: GateResultOut})
def create_gate_result(request: HttpRequest, data: GateResultIn) -> Status:
    result = learnings.record_gate_result(actor=caller(request), **data.dict())
    return Status(201, {"id": result.pk, "story": result.story, "gate": result.gate, "verdict": result.verdict})


@router.post("/injection-block", operation_id="get_injection_block", response=InjectionOut)
def injection_block(request: HttpRequest, data: InjectionIn) -> dict:
    """Always 200: a failing source gives `_source indisponible_` in its section only."""
    return injection.build_block(actor=caller(request), **data.dict())


@router.get("/search", operation_id="search_memory", response=list[SearchHit])
def search_memory(request: HttpRequest, query: Query[SearchQuery]) -> list[dict]:
    """Ranked hits with their cosine similarity as `score`."""
    return search.search_memory(caller(request), **query.dict())
