"""JobEnvelope, GraphState updates and AgentOutput (seed 001) as pydantic models. Pure: no Django.

Field names stay camelCase as in the seed, since agents written against it send them so. ``intent``
and ``scope.entityType`` take values of the operators' registries (agents/vocabulary.py): their
shape is judged here, their membership when a job is admitted (agents/jobs/submission.py).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from agents.vocabulary import Value
from governance.kernel.bounds import MAX_COUNT, Count, Moment

# The most a job may ask for (README, *Numbers and times*): a week of run time, and a spending
# limit far above any real one. Counts are bounded by MAX_COUNT.
MAX_TIMEOUT_MS = 7 * 24 * 3600 * 1000
MAX_BUDGET_DOLLARS = 1_000_000


def _lower(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


Lower = BeforeValidator(_lower)


class Source(StrEnum):
    CRON = "cron"
    WEBHOOK = "webhook"
    MANUAL = "manual"
    EVENT = "event"


class Priority(StrEnum):
    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"
    CRITICAL = "critical"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class JobScope(_Strict):
    entityType: Value = Field(description="A value of the entityTypes registry (GET /api/v1/registries).")
    entityIds: list[Annotated[str, Field(max_length=500)]] | None = Field(None, max_length=10_000)
    filters: dict[str, Any] | None = None
    limit: int = Field(1000, ge=1, le=10_000)


class JobConstraints(_Strict):
    maxTokens: int = Field(4000, ge=1, le=MAX_COUNT)
    maxDocs: Count = 10
    timeout: int = Field(300_000, ge=1, le=MAX_TIMEOUT_MS, description="milliseconds, at most a week")
    budget: float | None = Field(None, ge=0, le=MAX_BUDGET_DOLLARS, description="spending limit in dollars")
    dryRun: bool = False


class JobContext(_Strict):
    userId: str | None = None
    source: Annotated[Source, Lower]
    priority: Annotated[Priority, Lower] = Priority.NORMAL
    ragVersion: str | None = None
    seoRole: str | None = None


DEFAULT_KEY_FIELDS = ("intent", "scope", "payload")


class KeyFieldMissing(ValueError):
    """An idempotency key strategy needs a value the envelope does not have (``loc`` under body)."""

    def __init__(self, loc: tuple[str, ...], message: str) -> None:
        super().__init__(message)
        self.loc = loc


def _at(document: dict[str, Any], path: str) -> Any:
    """The value at a dotted path of the envelope (``scope.entityType``), None when absent."""
    value: Any = document
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


class JobEnvelopeIn(_Strict):
    """What an agent submits; the server fills ids, defaults and the idempotency key."""

    jobId: UUID | None = None
    traceId: UUID | None = None
    parentJobId: UUID | None = None
    intent: Value = Field(description="A value of the intents registry (GET /api/v1/registries).")
    scope: JobScope
    payload: dict[str, Any] = Field(default_factory=dict)
    constraints: JobConstraints = Field(default_factory=JobConstraints)
    context: JobContext
    idempotencyKey: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    createdAt: Moment | None = Field(None, description="Accepted for compatibility; the server's time is kept.")
    expiresAt: Moment | None = None

    def idempotency_key(self, strategy: str = "hash", fields: Sequence[str] = DEFAULT_KEY_FIELDS) -> str:
        """Seed 001's IdempotencyConfig (``keyStrategy``, ``keyFields``):

        * ``hash`` (the default): the caller's ``idempotencyKey``, else a stable hash of the
          ``fields`` (by default intent, scope and payload: the seed's createJobEnvelope);
        * ``composite``: the ``fields``' values joined with ``:`` (the seed's default fields,
          ``intent, scope.entityType, idempotencyKey``, make the caller's key one part of it);
        * ``custom``: the caller's key, which is then required.

        KeyFieldMissing names the envelope path a strategy needs and did not get."""
        if strategy == "custom":
            if not self.idempotencyKey:
                raise KeyFieldMissing(("idempotencyKey",), "the custom key strategy needs the caller's idempotencyKey")
            return self.idempotencyKey
        if strategy == "hash" and self.idempotencyKey:
            return self.idempotencyKey
        document = self.model_dump(mode="json")
        values = {field: _at(document, field) for field in fields}
        if strategy == "hash":
            return stable_hash(values)
        parts = []
        for field, value in values.items():
            if value is None:
                raise KeyFieldMissing(tuple(field.split(".")), f"the composite key needs {field}")
            parts.append(str(value) if isinstance(value, str | int | float | bool) else stable_hash(value)[5:21])
        key = ":".join(parts)
        return key if len(key) <= 200 else f"{key[:130]}:{hashlib.sha256(key.encode()).hexdigest()}"

    def content_hash(self) -> str:
        """What a caller's idempotency key stands for: the work asked (intent, scope, payload and
        constraints), not the ids or times a retrying client may regenerate."""
        return content_hash(
            self.intent,
            self.scope.model_dump(mode="json"),
            self.payload,
            self.constraints.model_dump(mode="json"),
        )


def content_hash(intent: str, scope: dict[str, Any], payload: dict[str, Any], constraints: dict[str, Any]) -> str:
    return stable_hash({"intent": intent, "scope": scope, "payload": payload, "constraints": constraints})


def stable_hash(content: dict[str, Any]) -> str:
    """SHA-256 of canonical JSON (keys sorted at every depth): the same content in another key
    order gives the same key; nothing time-dependent goes in (the seed's Date.now() warning)."""
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "idem_" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class GraphError(_Strict):
    node: Annotated[str, Field(min_length=1, max_length=200)]
    message: Annotated[str, Field(min_length=1, max_length=10_000)]
    timestamp: Moment = Field(default_factory=lambda: datetime.now(UTC))
    recoverable: bool


class BudgetUsage(_Strict):
    """Usage counters as totals so far (not deltas): resending an update changes nothing."""

    tokensUsed: Count | None = None
    docsRetrieved: Count | None = None
    apiCalls: Count | None = None
    costUsed: float | None = Field(
        None, ge=0, le=MAX_BUDGET_DOLLARS, description="dollars spent so far, against constraints.budget"
    )


class GraphStateUpdate(_Strict):
    """``currentNode`` moves the flow (and is appended to visitedNodes), ``visitedNodes`` appends
    nodes passed through in between, ``intermediate`` is merged key by key, ``errors`` appended."""

    currentNode: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    visitedNodes: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(default_factory=list)
    retryCount: Count | None = None
    intermediate: dict[str, Any] = Field(default_factory=dict)
    budget: BudgetUsage | None = None
    errors: list[GraphError] = Field(default_factory=list)


class ArtifactRef(BaseModel):
    """An artifact the agent produced (a URI or inline content); kept as given."""

    model_config = ConfigDict(extra="allow")

    name: Annotated[str, Field(min_length=1, max_length=300)]
    type: str | None = None
    uri: str | None = None


def _float_sized(value: Any) -> Any:
    """A reported metric that is a number must fit a double: KPI samples are stored as one."""
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            float(value)
        except OverflowError as exc:
            raise ValueError("the number is too large for a metric") from exc
    return value


class AgentOutput(_Strict):
    success: bool
    data: Any = None
    artifacts: list[ArtifactRef] = Field(default_factory=list)
    metrics: dict[str, Annotated[Any, AfterValidator(_float_sized)]] = Field(default_factory=dict)
    nextAction: Literal["continue", "escalate", "complete"] | None = None
    confidence: float | None = Field(None, ge=0, le=1)
    error_count: Count | None = None
    human_required: bool | None = None

    def evaluation_context(self, job_input: dict[str, Any]) -> dict[str, Any]:
        """Names a post-condition or trigger may use: the job's input fields and the output's
        data fields by their own names (`urls`, `scores`), plus `input`, `output`, `metrics`
        and the AgentOutput fields (`confidence`, `error_count`, `human_required`, ...)."""
        data = self.data if isinstance(self.data, dict) else {}
        context: dict[str, Any] = {**job_input, **data}
        context.update(
            input=job_input,
            output=self.data,
            metrics=self.metrics,
            success=self.success,
            nextAction=self.nextAction,
            confidence=self.confidence,
            error_count=self.error_count,
            human_required=self.human_required,
        )
        return context


def chain_depth(marker: Any) -> int:
    """How many hops a job's ``payload.event`` (or ``payload.continuation``) says led to it. A
    payload is the submitter's to write, so the count is never below 0: a forged negative one
    would otherwise buy an unbounded chain."""
    depth = marker.get("depth") if isinstance(marker, dict) else None
    return max(0, depth) if isinstance(depth, int) and not isinstance(depth, bool) else 0
