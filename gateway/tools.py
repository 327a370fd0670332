"""The platform's own capabilities as MCP tools.

Each tool is a row of one table: its name, what it does, the pydantic model its arguments are
validated with (the REST API's own schemas wherever the API has one, so the rules exist once) and
the service call it makes. Handlers are synchronous and run the same service functions as the
REST endpoints, with the same principal; a refusal is a ``DomainError`` the server turns into a
tool error the agent can read.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from agents import approvals
from agents.access import owned_job, traced
from agents.api.jobs import serialize
from agents.envelope import AgentOutput, GraphStateUpdate, JobEnvelopeIn
from agents.jobs import leases, results, submission
from agents.schemas import JobOut, JobResultOut
from agents.vocabulary import Registry
from governance.contracts import services as contracts
from governance.contracts.api import ReportOut, ValidateIn
from governance.kernel.access import agent_or_perm
from governance.kernel.exceptions import Conflict
from governance.kernel.principals import Principal
from memory import clarifications, injection, learnings, search
from memory.embeddings import EmbeddingError
from memory.schemas import (
    ClarificationsCreatedOut,
    ClarificationsIn,
    GateResultIn,
    InjectionIn,
    InjectionOut,
    SearchHit,
    SearchQuery,
)
from memory.subjects import services as subjects
from memory.subjects.schemas import EmotionIn, MemoryHit


class _Arguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


class JobRef(_Arguments):
    jobId: UUID
    leaseOwner: str | None = Field(
        None, max_length=200, description="The worker that holds the lease; defaults to the key's prefix."
    )


class LeaseArguments(_Arguments):
    jobId: UUID
    owner: str | None = Field(None, max_length=200, description="Worker identity; defaults to the key's prefix.")
    ttlSeconds: int | None = Field(None, ge=1, le=24 * 3600)


class StateArguments(JobRef):
    update: GraphStateUpdate


class ResultArguments(JobRef):
    output: AgentOutput


class ValidateOutputArguments(ValidateIn):
    contract: str = Field(..., min_length=1, max_length=100, description="A contract of the catalog, by name.")


class GateResultOut(BaseModel):
    id: int
    story: str
    gate: int
    verdict: str


class SearchOut(BaseModel):
    hits: list[SearchHit]


class SubjectSearchArguments(_Arguments):
    subject: str = Field(..., min_length=1, max_length=200, description="The person, by key.")
    q: str = Field(..., min_length=1, max_length=10_000)
    k: int = Field(5, ge=1, le=100)


class SubjectSearchOut(BaseModel):
    hits: list[MemoryHit]


class EmotionArguments(EmotionIn):
    subject: str = Field(..., min_length=1, max_length=200, description="The person, by key.")


class EmotionOut(BaseModel):
    emotion: str
    intensity: float
    timestamp: Any


class ApprovalArguments(_Arguments):
    title: str = Field(..., min_length=1, max_length=200, description="What you ask a human to approve.")
    details: str = Field("", max_length=10_000, description="What the reviewer needs to decide.")
    payload: Any = Field(None, description="What the approval is bound to (its hash is recorded).")


class ApprovalRef(_Arguments):
    id: int


class DecisionOut(BaseModel):
    decision: str
    comment: str
    decidedBy: str
    decidedAt: Any


class ApprovalOut(BaseModel):
    id: int
    status: str = Field(..., description="pending, approved, rejected or expired: poll get_approval while pending.")
    title: str
    payloadHash: str | None
    expiresAt: Any
    decision: DecisionOut | None


class SubmittedJobOut(JobOut):
    created: bool = Field(..., description="False when the idempotency key replayed an earlier job.")


# Where an argument takes a registry's values, as a path into the input schema.
RegistryFields = tuple[tuple[Registry, tuple[str, ...]], ...]


@dataclass(frozen=True)
class PlatformTool:
    name: str
    description: str
    arguments: type[BaseModel]
    output: type[BaseModel]
    run: Callable[[Principal, Any], Any]
    read_only: bool = False
    registry_fields: RegistryFields = ()

    def input_schema(self) -> dict[str, Any]:
        return self.arguments.model_json_schema(by_alias=True)

    def with_registry_values(self, schema: dict[str, Any], active: dict[Registry, list[str]]) -> dict[str, Any]:
        """``schema`` (the input schema) with an ``enum`` of the registry's active values on each
        of ``registry_fields``: an agent reading tools/list sees what is accepted today, the
        values operators added included. A registry with no active value gets no enum (an empty
        one would read as a schema error to some clients); admission refuses anything then."""
        schema = copy.deepcopy(schema)
        for registry, path in self.registry_fields:
            node = schema
            for key in path:
                node = node[key]
            if active.get(registry):
                node["enum"] = active[registry]
        return schema

    def output_schema(self) -> dict[str, Any]:
        return self.output.model_json_schema(mode="serialization", by_alias=False)

    def answer(self, result: Any) -> dict[str, Any]:
        """The result in the REST response's own shape (the same schema renders both)."""
        return self.output.model_validate(result).model_dump(mode="json")


def _key_prefix(principal: Principal) -> str:
    """The default worker name, as on the REST path: every MCP caller came with a key."""
    assert principal.api_key is not None
    return principal.api_key.prefix


def _writer(principal: Principal, lease_owner: str | None) -> str:
    return lease_owner or _key_prefix(principal)


def _submit_job(principal: Principal, data: JobEnvelopeIn) -> dict[str, Any]:
    job, created = submission.submit_job(data, actor=principal)
    return {**serialize(traced(job)), "created": created}


def _lease_job(principal: Principal, data: LeaseArguments) -> dict[str, Any]:
    job = owned_job(principal, data.jobId)
    owner = data.owner or _key_prefix(principal)
    return serialize(leases.claim_lease(job, actor=principal, owner=owner, ttl_seconds=data.ttlSeconds))


def _update_job_state(principal: Principal, data: StateArguments) -> dict[str, Any]:
    job = owned_job(principal, data.jobId)
    return serialize(
        results.update_state(job, data.update, actor=principal, writer=_writer(principal, data.leaseOwner))
    )


def _submit_job_result(principal: Principal, data: ResultArguments) -> dict[str, Any]:
    job = owned_job(principal, data.jobId)
    return results.submit_result(job, data.output, actor=principal, writer=_writer(principal, data.leaseOwner))


def _validate_output(principal: Principal, data: ValidateOutputArguments) -> dict[str, Any]:
    fields = {"output": data.output, "session": data.session, "job": data.job, "known_ids": data.known_ids}
    return contracts.report(contracts.validate_output(principal, data.contract, **fields))


def _record_gate_result(principal: Principal, data: GateResultIn) -> dict[str, Any]:
    result = learnings.record_gate_result(actor=principal, **data.dict())
    return {"id": result.pk, "story": result.story, "gate": result.gate, "verdict": result.verdict}


def _add_clarification(principal: Principal, data: ClarificationsIn) -> dict[str, Any]:
    agent_or_perm(principal, "memory.add_clarification")
    version, name = clarifications.persist_clarifications(**data.dict(), actor=principal)
    return {"story": data.story, "version": version, "name": name}


def _search_memory(principal: Principal, data: SearchQuery) -> dict[str, Any]:
    try:
        return {"hits": search.search_memory(principal, **data.dict())}
    except EmbeddingError as exc:
        raise Conflict(f"The embedding backend is unavailable: {exc}") from exc


def _search_subject(principal: Principal, data: SubjectSearchArguments) -> dict[str, Any]:
    try:
        return {"hits": subjects.search_subject(principal, data.subject, q=data.q, k=data.k)}
    except EmbeddingError as exc:
        raise Conflict(f"The embedding backend is unavailable: {exc}") from exc


def _record_emotion(principal: Principal, data: EmotionArguments) -> dict[str, Any]:
    return subjects.record_emotion(principal, data.subject, **data.as_fields())


def _request_approval(principal: Principal, data: ApprovalArguments) -> dict[str, Any]:
    item = approvals.request_approval(actor=principal, title=data.title, details=data.details, payload=data.payload)
    return approvals.describe(item)


def _get_approval(principal: Principal, data: ApprovalRef) -> dict[str, Any]:
    return approvals.describe(approvals.approval(principal, data.id))


def _injection_block(principal: Principal, data: InjectionIn) -> dict[str, Any]:
    return injection.build_block(actor=principal, **data.dict())


TOOLS: dict[str, PlatformTool] = {
    tool.name: tool
    for tool in (
        PlatformTool(
            "submit_job",
            "Submit a JobEnvelope (seed 001). The same idempotency key within the result TTL returns the "
            "first job with created=false.",
            JobEnvelopeIn,
            SubmittedJobOut,
            _submit_job,
            registry_fields=(
                (Registry.INTENTS, ("properties", "intent")),
                (Registry.ENTITY_TYPES, ("$defs", "JobScope", "properties", "entityType")),
            ),
        ),
        PlatformTool(
            "lease_job",
            "Take or renew the lease of one of your jobs (lockTTL); refused while another worker holds it.",
            LeaseArguments,
            JobOut,
            _lease_job,
        ),
        PlatformTool(
            "update_job_state",
            "A GraphState update of a job you lease: current node, visited nodes, usage totals.",
            StateArguments,
            JobOut,
            _update_job_state,
        ),
        PlatformTool(
            "submit_job_result",
            "The AgentOutput of a job you lease: post-conditions, KPIs and escalations are evaluated.",
            ResultArguments,
            JobResultOut,
            _submit_job_result,
        ),
        PlatformTool(
            "get_injection_block",
            "Step 0 (seed 004): the Markdown block of learnings, watch notes and clarifications to read "
            "before working on a story. It never fails: a failing source says so in its own section.",
            InjectionIn,
            InjectionOut,
            _injection_block,
            read_only=True,
        ),
        PlatformTool(
            "search_memory",
            "Learnings, watch notes or clarifications nearest to a text (pgvector), score = cosine similarity.",
            SearchQuery,
            SearchOut,
            _search_memory,
            read_only=True,
        ),
        PlatformTool(
            "search_subject_memory",
            "One person's memories nearest to a text (seed 002), if your manifest enables long-term memory.",
            SubjectSearchArguments,
            SubjectSearchOut,
            _search_subject,
        ),
        PlatformTool(
            "record_emotion",
            "An emotion of a person as you observed it (seed 002); an unrealistic move is refused.",
            EmotionArguments,
            EmotionOut,
            _record_emotion,
        ),
        PlatformTool(
            "request_approval",
            "Ask a human reviewer to approve something before you do it. Returns at once with the request's "
            "id and status; poll get_approval until it is no longer pending (it expires if nobody decides).",
            ApprovalArguments,
            ApprovalOut,
            _request_approval,
        ),
        PlatformTool(
            "get_approval",
            "The status of one of your approval requests, with the reviewer's decision once there is one.",
            ApprovalRef,
            ApprovalOut,
            _get_approval,
        ),
        PlatformTool(
            "validate_output",
            "Check an LLM output against a contract of the catalog: every violation with its JSON path, "
            "code and the runtime effect lost. The check is stored, as on POST /contracts/{name}/validate.",
            ValidateOutputArguments,
            ReportOut,
            _validate_output,
        ),
        PlatformTool(
            "record_gate_result",
            "Record a story gate's GO / NO_GO (seed 004): it feeds the reuse scores of the learnings.",
            GateResultIn,
            GateResultOut,
            _record_gate_result,
        ),
        PlatformTool(
            "add_clarification",
            "Store the PO's four answers for a story, verbatim, as its next version (seed 004 flow B2).",
            ClarificationsIn,
            ClarificationsCreatedOut,
            _add_clarification,
        ),
    )
}
