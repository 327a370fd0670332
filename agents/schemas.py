"""API schemas of the agents app (camelCase where seed 001 uses it)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from ninja import Field, Schema
from pydantic import ConfigDict

from agents.manifest import AGENT_ID_PATTERN, Permission
from agents.vocabulary import ExactValue, Label


class AgentIn(Schema):
    agent_id: str = Field(..., pattern=AGENT_ID_PATTERN, max_length=128, examples=["agent.seo.vlevel"])
    name: str = Field("", max_length=200)


class AgentOut(Schema):
    agent_id: str
    name: str
    role: str
    domain: str
    owner: str
    active_version: str | None = Field(None, alias="active_manifest.version")
    created_at: datetime


class KpiOut(Schema):
    metric_id: str
    target: float
    threshold_warning: float
    threshold_critical: float
    unit: str
    direction: str
    current: float | None = Field(
        ..., description="The window's mean of the samples the KPI is judged on (see `source`); null without any"
    )
    status: Literal["ok", "warning", "critical", "no_data"]
    source: Literal["derived", "reported"] = Field(
        ...,
        description="Where `current` comes from: derived by the platform from the jobs (success, processing time, "
        "escalations), whatever the agent reports; or, for a KPI the platform cannot measure, the agent's reports",
    )
    reported: float | None = Field(
        ..., description="The window's mean of what the agent reported in its results' `metrics`; never judged"
    )


class KpiReportOut(Schema):
    window_days: int
    items: list[KpiOut]


class ToolCallIn(Schema):
    permission: Permission | None = Field(None, description="The permission the call needs; refused if not granted.")
    jobId: UUID | None = None
    arguments: dict[str, Any] = Field(
        default_factory=dict,
        description="The call's arguments. A tool that requires approval is approved for exactly these (by hash).",
    )


class ToolApprovalPendingOut(Schema):
    reviewItemId: int
    status: str = Field(..., description="`pending`: ask again with the same arguments once a reviewer approved.")


class ApprovalIn(Schema):
    action: str = Field(..., min_length=1, max_length=200, description="What you ask a human to approve.")
    arguments: Any = Field(None, description="What the approval is bound to (its hash is recorded).")
    reason: str = Field("", max_length=10_000, description="What the reviewer needs to decide.")


class ApprovalDecisionOut(Schema):
    decision: str
    comment: str
    decidedBy: str
    decidedAt: datetime


class ApprovalOut(Schema):
    approvalId: int
    reviewItemId: int
    status: Literal["pending", "approved", "rejected", "expired"] = Field(
        ..., description="Poll while `pending`; `expired` once `expiresAt` passed with no decision."
    )
    title: str
    payloadHash: str | None
    expiresAt: datetime | None
    decision: ApprovalDecisionOut | None


class ArgumentChangeOut(Schema):
    op: Literal["add", "remove", "replace"]
    path: str = Field(..., description="JSON Pointer (RFC 6901) into the arguments; `/` for the arguments themselves.")
    before: Any = Field(None, description="The value asked for (remove, replace).")
    after: Any = Field(None, description="The value approved (add, replace).")


class ArgumentsEditedOut(Schema):
    """A reviewer approved the call with other arguments than those asked for."""

    reviewItemId: int
    editedBy: str = Field(..., description="The reviewer who edited and approved them.")
    arguments: dict[str, Any] = Field(..., description="The arguments approved: the call is made with these.")
    argumentsHash: str = Field(..., description="Their SHA-256, which the approval is bound to.")
    requestedArgumentsHash: str = Field(..., description="The SHA-256 of the arguments asked for (not approved).")
    changes: list[ArgumentChangeOut]


class ToolCallOut(Schema):
    id: int
    tool_id: str
    permission: str
    requires_approval: bool
    rate_limit: int
    remaining: int
    called_at: datetime
    grantId: int | None = Field(None, description="The reviewer's approval this call used, for approval-gated tools.")
    dryRun: bool = Field(
        False, description="The call names a `dryRun` job: recorded, never to be made (and never sent to a reviewer)."
    )
    argumentsEdited: ArgumentsEditedOut | None = Field(
        None, description="The approval used is for arguments a reviewer edited: make the call with those."
    )


# Named (not `dict`) so that PUT's 200 and 201 share one model in generated clients.
class ManifestOut(Schema):
    """The manifest document as stored (seed 001); after a PUT, with `warnings`: what loads but is
    not enforced, each with its body path."""

    model_config = ConfigDict(extra="allow")


class LeaseIn(Schema):
    owner: str | None = Field(None, max_length=200, description="Worker identity; defaults to the key's prefix.")
    ttlSeconds: int | None = Field(None, ge=1, le=24 * 3600)


class GraphStateOut(Schema):
    currentNode: str = Field(..., alias="current_node")
    visitedNodes: list[str] = Field(..., alias="visited_nodes")
    retryCount: int = Field(..., alias="retry_count")
    intermediate: dict[str, Any]
    budget: dict[str, Any]
    errors: list[dict[str, Any]]
    ragContext: dict[str, Any] | None = Field(
        None,
        alias="rag_context",
        description="Seed 001's ragContext: the step-0 block the job was given at its first lease",
    )


class LeaseOut(Schema):
    owner: str = Field(..., alias="lease_owner")
    expiresAt: datetime | None = Field(None, alias="lease_expires_at")
    attempts: int
    nextAttemptAt: datetime | None = Field(None, alias="next_attempt_at")


class ArtifactOut(Schema):
    kind: str
    name: str
    contentType: str = Field(..., alias="content_type")
    url: str


class EscalationOut(Schema):
    """One escalation of a job, as ``escalations.describe`` gives it (seed 001 EscalationConfig)."""

    id: int
    status: str
    triggers: list[str]
    reason: str
    targetAgent: str | None
    humanRequired: bool
    childJobId: UUID | None
    reviewItemId: int | None
    deadline: datetime
    steps: list[dict[str, Any]]


class JobOut(Schema):
    jobId: UUID
    traceId: UUID
    parentJobId: UUID | None
    agentId: str
    intent: str
    scope: dict[str, Any]
    payload: dict[str, Any]
    constraints: dict[str, Any]
    context: dict[str, Any]
    idempotencyKey: str
    createdAt: datetime
    expiresAt: datetime | None
    status: str
    startedAt: datetime | None
    finishedAt: datetime | None
    lease: LeaseOut
    graphState: GraphStateOut
    output: dict[str, Any] | None
    preConditions: list[dict[str, Any]]
    postConditions: list[dict[str, Any]]
    artifacts: list[ArtifactOut]
    escalations: list[EscalationOut]


class EscalateIn(Schema):
    reason: str = Field(..., min_length=1, max_length=2000, description="Why the agent escalates, kept word for word")


class JobResultOut(Schema):
    status: str
    postConditions: list[dict[str, Any]]
    escalation: EscalationOut | None
    nextAttemptAt: datetime | None = None
    nextJobId: UUID | None = Field(
        None, description='The follow-up job a successful result with nextAction "continue" created (same trace).'
    )


class TriggeredJobOut(Schema):
    """What a webhook sender learns: the job it started, nothing of the agent's work."""

    jobId: UUID
    status: str


class RegistryValueIn(Schema):
    """A value to add to a registry, as it will be stored (no case folding), and its label."""

    value: ExactValue = Field(..., examples=["summarize_ticket"])
    label: Label | None = Field(None, description="What pages show; the value, capitalised, when absent.")


class RegistryLabelIn(Schema):
    label: Label


class RegistryValueOut(Schema):
    value: str
    label: str
    retired: bool = Field(..., description="Retired: what already has the value keeps it; new use is 422.")


class RegistriesOut(Schema):
    domains: list[RegistryValueOut]
    intents: list[RegistryValueOut]
    entityTypes: list[RegistryValueOut]
    roles: list[RegistryValueOut]
