"""The platform's own capabilities as MCP tools.

Each tool is a row of one table: its name, what it does, the pydantic model its arguments are
validated with (the REST API's own schemas wherever the API has one, so the rules exist once) and
the service call it makes. Handlers are synchronous and run the same service functions as the
REST endpoints, with the same principal; a refusal is a ``DomainError`` the server turns into a
tool error the agent can read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from agents import jobs
from agents.access import owned_job
from agents.envelope import AgentOutput, GraphStateUpdate, JobEnvelopeIn
from agents.jobs_api import serialize
from agents.schemas import JobOut, JobResultOut
from governance.kernel.principals import Principal
from memory import injection
from memory.schemas import InjectionIn, InjectionOut


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


class SubmittedJobOut(JobOut):
    created: bool = Field(..., description="False when the idempotency key replayed an earlier job.")


@dataclass(frozen=True)
class PlatformTool:
    name: str
    description: str
    arguments: type[BaseModel]
    output: type[BaseModel]
    run: Callable[[Principal, Any], Any]
    read_only: bool = False

    def input_schema(self) -> dict[str, Any]:
        return self.arguments.model_json_schema(by_alias=True)

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
    job, created = jobs.submit_job(data, actor=principal)
    return {**serialize(job), "created": created}


def _lease_job(principal: Principal, data: LeaseArguments) -> dict[str, Any]:
    job = owned_job(principal, data.jobId)
    owner = data.owner or _key_prefix(principal)
    return serialize(jobs.claim_lease(job, actor=principal, owner=owner, ttl_seconds=data.ttlSeconds))


def _update_job_state(principal: Principal, data: StateArguments) -> dict[str, Any]:
    job = owned_job(principal, data.jobId)
    return serialize(jobs.update_state(job, data.update, actor=principal, writer=_writer(principal, data.leaseOwner)))


def _submit_job_result(principal: Principal, data: ResultArguments) -> dict[str, Any]:
    job = owned_job(principal, data.jobId)
    return jobs.submit_result(job, data.output, actor=principal, writer=_writer(principal, data.leaseOwner))


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
    )
}
