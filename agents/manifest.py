"""The agent manifest (seed 001's `Agent` contract) as pydantic models. Pure: no Django.

pydantic plays the part Zod played in the seed: a manifest that loads here is one the platform
can enforce (tools and their permissions, rate limits, conditions that parse, coherent KPI
thresholds). Enum values are accepted in any case (`EXECUTOR`, `executor`) and stored lower-case.
"""

from __future__ import annotations

import hashlib
import json
import re
from enum import StrEnum
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from agents import conditions

AGENT_ID_PATTERN = r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$"
SEMVER_PATTERN = (
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
_SEMVER = re.compile(SEMVER_PATTERN)


class AgentRole(StrEnum):
    ARCHITECT = "architect"
    ANALYZER = "analyzer"
    EXECUTOR = "executor"
    VALIDATOR = "validator"
    ORCHESTRATOR = "orchestrator"


class Domain(StrEnum):
    CORE = "core"
    INFRA = "infra"
    DATA = "data"
    SEO = "seo"
    RAG = "rag"
    CART = "cart"
    AICOS = "aicos"


class Permission(StrEnum):
    READ = "read"
    WRITE = "write"
    EXECUTE = "execute"


class Storage(StrEnum):
    SUPABASE = "supabase"
    REDIS = "redis"
    VECTOR = "vector"


class JobIntent(StrEnum):
    SEO_AUDIT = "seo_audit"
    CONTENT_GENERATE = "content_generate"
    RAG_REINDEX = "rag_reindex"
    KG_DIAGNOSE = "kg_diagnose"
    ROUTES_SYNC = "routes_sync"
    SITEMAP_BUILD = "sitemap_build"


class KpiDirection(StrEnum):
    HIGHER_IS_BETTER = "higher_is_better"
    LOWER_IS_BETTER = "lower_is_better"


def _lower(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


def _expression(value: Any) -> Any:
    """Refuse an expression that does not parse now, at load time, not when a job runs."""
    if isinstance(value, str):
        try:
            conditions.parse(value)
        except conditions.ConditionSyntaxError as exc:
            raise ValueError(f"condition does not parse: {exc}") from exc
    return value


Lower = BeforeValidator(_lower)
Expression = Annotated[str, BeforeValidator(_expression)]
Name = Annotated[str, Field(min_length=1, max_length=200)]
AgentId = Annotated[str, Field(pattern=AGENT_ID_PATTERN, max_length=128)]


class _Strict(BaseModel):
    """Unknown keys are refused: a typo such as `rate_limt` must not silently drop a limit."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class InputSpec(_Strict):
    name: Name
    type: str = Field(min_length=1, description="Type expression, e.g. z.array(z.string().url())")
    required: bool = True
    description: str = ""


class OutputSpec(_Strict):
    name: Name
    type: str = Field(min_length=1)
    description: str = ""


class ToolSpec(_Strict):
    tool_id: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.:\-]+$", max_length=200)]
    permissions: Annotated[Permission, Lower]
    rate_limit: int = Field(gt=0, le=100_000, description="Calls per minute")
    requires_approval: bool | None = Field(
        None, description="A reviewer must approve each use; defaults to true for write and execute tools."
    )
    approval_timeout_hours: float | None = Field(
        None, gt=0, le=24 * 30, description="Extension: how long a request to use this tool waits for a reviewer."
    )

    @model_validator(mode="before")
    @classmethod
    def _singular_permission(cls, data: Any) -> Any:
        # Authors write `permission:` as often as the seed's `permissions:`.
        if isinstance(data, dict) and "permission" in data and "permissions" not in data:
            data = {**data, "permissions": data["permission"]}
            del data["permission"]
        return data

    @model_validator(mode="after")
    def _approval_default(self) -> ToolSpec:
        if self.requires_approval is None:
            object.__setattr__(self, "requires_approval", self.permissions != Permission.READ)
        return self


class SkillRef(_Strict):
    skill_id: Name
    required: bool = True


class ShortTermMemory(_Strict):
    enabled: bool = False
    max_tokens: int | None = Field(None, gt=0)


class LongTermMemory(_Strict):
    enabled: bool = False
    storage: Annotated[Storage, Lower] | None = None

    @model_validator(mode="after")
    def _storage_when_enabled(self) -> LongTermMemory:
        if self.enabled and self.storage is None:
            raise ValueError("storage is required when long-term memory is enabled")
        return self


class SharedMemory(_Strict):
    enabled: bool = False
    namespaces: list[Name] = Field(default_factory=list)


class MemoryConfig(_Strict):
    short_term: ShortTermMemory = Field(default_factory=ShortTermMemory)
    long_term: LongTermMemory = Field(default_factory=LongTermMemory)
    shared: SharedMemory = Field(default_factory=SharedMemory)


class ConditionSpec(_Strict):
    expression: Expression
    error_code: Annotated[str, Field(pattern=r"^[A-Z][A-Z0-9_]*$", max_length=100)]


class ValidationConfig(_Strict):
    pre_conditions: list[ConditionSpec] = Field(default_factory=list)
    post_conditions: list[ConditionSpec] = Field(default_factory=list)
    invariants: list[str] = Field(default_factory=list)


class EscalationConfig(_Strict):
    triggers: list[Expression] = Field(default_factory=list)
    target_agent: AgentId | None = None
    human_required: bool = False
    timeout_hours: float = Field(24, gt=0, le=24 * 365)

    @model_validator(mode="after")
    def _somewhere_to_go(self) -> EscalationConfig:
        if self.triggers and self.target_agent is None and not self.human_required:
            raise ValueError("triggers need a target_agent or human_required: true")
        return self


class KpiSpec(_Strict):
    metric_id: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$", max_length=100)]
    target: float
    threshold_warning: float
    threshold_critical: float
    unit: str = ""

    @property
    def direction(self) -> KpiDirection:
        return kpi_direction(self.target, self.threshold_warning, self.threshold_critical)

    @model_validator(mode="after")
    def _coherent_thresholds(self) -> KpiSpec:
        kpi_direction(self.target, self.threshold_warning, self.threshold_critical)
        return self


def kpi_direction(target: float, warning: float, critical: float) -> KpiDirection:
    """target > warning > critical: higher is better (a success rate); the reverse: lower is
    better (a processing time). Anything else cannot be rated and is refused."""
    if target > warning > critical:
        return KpiDirection.HIGHER_IS_BETTER
    if target < warning < critical:
        return KpiDirection.LOWER_IS_BETTER
    raise ValueError(
        f"thresholds must be strictly ordered: target > warning > critical (higher is better) "
        f"or target < warning < critical (lower is better); got {target}, {warning}, {critical}"
    )


def _unique(items: list[Any], attribute: str, what: str) -> None:
    seen: set[str] = set()
    for item in items:
        value = getattr(item, attribute)
        if value in seen:
            raise ValueError(f"{what} {value!r} is declared twice")
        seen.add(value)


class Manifest(_Strict):
    id: AgentId
    name: Name
    role: Annotated[AgentRole, Lower]
    domain: Annotated[Domain, Lower]
    version: Annotated[str, Field(pattern=SEMVER_PATTERN, max_length=100)]
    owner: Name
    inputs: list[InputSpec] = Field(default_factory=list)
    outputs: list[OutputSpec] = Field(default_factory=list)
    tools: list[ToolSpec] = Field(default_factory=list)
    skills: list[SkillRef] = Field(default_factory=list)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    validation: ValidationConfig = Field(default_factory=ValidationConfig)
    escalation: EscalationConfig = Field(default_factory=EscalationConfig)
    kpis: list[KpiSpec] = Field(default_factory=list)
    intents: list[Annotated[JobIntent, Lower]] | None = Field(
        None, description="Extension: the job intents this agent accepts; absent means all."
    )
    provider_profiles: list[Annotated[str, Field(pattern=r"^[-a-zA-Z0-9_]+$", max_length=100)]] = Field(
        default_factory=list,
        description="Extension: the operator's provider profiles this agent may host its automations on.",
    )

    @field_validator("version", mode="before")
    @classmethod
    def _version_as_text(cls, value: Any) -> Any:
        return value.strip() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _no_duplicates(self) -> Manifest:
        _unique(self.inputs, "name", "input")
        _unique(self.outputs, "name", "output")
        _unique(self.tools, "tool_id", "tool")
        _unique(self.skills, "skill_id", "skill")
        _unique(self.kpis, "metric_id", "KPI")
        return self

    def tool(self, tool_id: str) -> ToolSpec | None:
        return next((tool for tool in self.tools if tool.tool_id == tool_id), None)

    def document(self) -> dict[str, Any]:
        """The canonical JSON form: what is stored, hashed, served and diffed."""
        return self.model_dump(mode="json")


class ManifestSyntaxError(ValueError):
    """The body is neither JSON nor YAML, or not a mapping."""


def read_text(text: str) -> dict[str, Any]:
    """Parse a JSON or YAML document (JSON is YAML) into a mapping, unwrapping `Agent:`."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ManifestSyntaxError(f"not valid YAML or JSON: {exc}") from exc
    return unwrap(data)


def unwrap(data: Any) -> dict[str, Any]:
    if isinstance(data, dict) and set(data) == {"Agent"}:
        data = data["Agent"]
    if not isinstance(data, dict):
        raise ManifestSyntaxError("a manifest is a mapping of fields (optionally under an `Agent:` root)")
    return data


def content_hash(document: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(document, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def version_key(version: str) -> tuple[int, int, int, int, tuple[tuple[int, int | str], ...]]:
    """Semver precedence: a release outranks its pre-releases; build metadata is ignored."""
    match = _SEMVER.match(version)
    if match is None:
        raise ValueError(f"{version!r} is not a semantic version")
    major, minor, patch, prerelease = (match.group(i) for i in range(1, 5))
    if prerelease is None:
        return int(major), int(minor), int(patch), 1, ()
    parts = tuple((0, int(p)) if p.isdigit() else (1, p) for p in prerelease.split("."))
    return int(major), int(minor), int(patch), 0, parts
