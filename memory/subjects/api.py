"""Per-subject conversational memory (/api/v1/memory/subjects/{subject}/...): import and export
of the seed-002 documents, semantic search, emotions, personality and the system prompt, facts,
and erasure."""

from typing import Any

from django.http import HttpRequest
from ninja import Query, Router, Status

from governance.kernel.auth import agent_key, caller, operator_key
from governance.kernel.exceptions import Forbidden
from governance.kernel.principals import Principal
from memory.models import PersonalityState
from memory.subjects import personality
from memory.subjects import services as subjects
from memory.subjects.access import READ, WRITE, restrict, subject_for
from memory.subjects.schemas import (
    AllowedAgentsIn,
    AllowedAgentsOut,
    EmotionIn,
    EmotionOut,
    FactCreatedOut,
    FactIn,
    ImportCountsOut,
    ImportIn,
    InteractionsIn,
    InteractionsOut,
    MemoryHit,
    SubjectExportOut,
    SystemPromptOut,
)

router = Router(tags=["subjects"])


def _operator(request: HttpRequest, perm: str) -> Principal:
    """The operator calling, once it is known to hold ``perm``."""
    principal = caller(request)
    if not principal.has_perm(perm):
        raise Forbidden(f"This needs the {perm} permission.")
    return principal


@router.post(
    "/subjects/{subject}/import",
    operation_id="import_subject",
    auth=operator_key,
    response=ImportCountsOut,
    exclude_none=True,
)
def import_subject(request: HttpRequest, subject: str, data: ImportIn) -> dict[str, int]:
    """Each given document replaces what the subject had of it; 422 with paths, nothing written."""
    actor = _operator(request, "memory.add_subject")
    return subjects.import_documents(subject, data.dict(), actor=actor, loc=["body"])


@router.get("/subjects/{subject}/export", operation_id="export_subject", auth=operator_key, response=SubjectExportOut)
def export_subject(request: HttpRequest, subject: str) -> dict[str, Any]:
    _operator(request, "memory.view_subject")
    return subjects.export(subjects.get(subject))


@router.get("/subjects/{subject}/search", operation_id="search_subject", response=list[MemoryHit])
def search_subject(
    request: HttpRequest,
    subject: str,
    q: str = Query(..., min_length=1, max_length=10_000),
    k: int = Query(5, ge=1, le=100),
) -> list[dict[str, Any]]:
    """The subject's memories nearest to ``q`` (cosine similarity as ``score``); 503 when the
    embedding backend cannot answer."""
    return subjects.search_subject(caller(request), subject, q=q, k=k)


@router.post("/subjects/{subject}/emotions", operation_id="record_emotion", auth=agent_key, response={201: EmotionOut})
def record_emotion(request: HttpRequest, subject: str, data: EmotionIn) -> Status:
    """422 naming from, to and probability when the move from the current emotion is unrealistic."""
    return Status(201, subjects.record_emotion(caller(request), subject, **data.as_fields()))


@router.get("/subjects/{subject}/system-prompt", operation_id="system_prompt", auth=agent_key, response=SystemPromptOut)
def system_prompt(request: HttpRequest, subject: str) -> dict[str, str]:
    found = subject_for(caller(request), subject, access=READ, purpose="system-prompt")
    state = PersonalityState.objects.filter(subject=found).first()
    return {"prompt": personality.system_prompt(state.traits if state else personality.DEFAULT_TRAITS)}


@router.post(
    "/subjects/{subject}/interactions", operation_id="record_interactions", auth=agent_key, response=InteractionsOut
)
def record_interactions(request: HttpRequest, subject: str, data: InteractionsIn) -> dict[str, Any]:
    """Count interactions and their feedback (trait deltas); traits move every update_frequency."""
    actor = caller(request)
    found = subject_for(actor, subject, access=WRITE, purpose="interactions")
    snapshot = personality.record_interactions(
        found, actor=actor, count=data.count, feedback=data.feedback, reason=data.reason
    )
    state = PersonalityState.objects.get(subject=found)
    return {
        "traits": state.traits,
        "total_interactions": state.total_interactions,
        "updated": snapshot is not None,
        "changes": snapshot.changes if snapshot else {},
    }


@router.post("/subjects/{subject}/facts", operation_id="add_fact", auth=agent_key, response={201: FactCreatedOut})
def add_fact(request: HttpRequest, subject: str, data: FactIn) -> Status:
    """A new fact with the subject's next id (pref_004, event_002, rel_003)."""
    actor = caller(request)
    found = subject_for(actor, subject, access=WRITE, purpose="fact")
    fact = subjects.add_fact_checked(found, data.kind, data.values, actor=actor)
    return Status(201, {"id": fact})


@router.delete("/subjects/{subject}", operation_id="erase_subject", auth=operator_key, response={204: None})
def erase_subject(request: HttpRequest, subject: str) -> Status:
    """Erase the subject's memory everywhere it is stored; the audit trail keeps only that it happened."""
    actor = _operator(request, "memory.delete_subject")
    subjects.erase(subjects.get(subject), actor=actor)
    return Status(204, None)


@router.get(
    "/subjects/{subject}/agents", operation_id="list_subject_agents", auth=operator_key, response=AllowedAgentsOut
)
def allowed_agents(request: HttpRequest, subject: str) -> dict[str, list[str]]:
    """The agents this subject is restricted to (empty: every agent whose manifest enables long-term memory)."""
    found = subject_for(caller(request), subject, access=READ, purpose="access")
    return {"agents": sorted(found.allowed_agents.values_list("agent_id", flat=True))}


@router.put("/subjects/{subject}/agents", operation_id="restrict_subject", auth=operator_key, response=AllowedAgentsOut)
def restrict_subject(request: HttpRequest, subject: str, data: AllowedAgentsIn) -> dict[str, list[str]]:
    """Restrict the subject to the named agents: any other agent is told the subject does not exist."""
    actor = caller(request)
    found = subject_for(actor, subject, access=WRITE, purpose="access")
    return {"agents": restrict(found, data.agents, actor=actor)}
