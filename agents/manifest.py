"""The agent manifest (seed 001's `Agent` contract) as pydantic models. Pure: no Django.

pydantic plays the part Zod played in the seed: a manifest that loads here is one the platform
can enforce (tools and their permissions, rate limits, conditions that parse, coherent KPI
thresholds, input and output types in the Zod subset of agents/types.py). Enum values are
accepted in any case (`EXECUTOR`, `executor`) and stored lower-case. ``role``, ``domain`` and
``intents`` take values of the operators' registries (agents/vocabulary.py): their shape is judged
here, their membership where the manifest is stored (agents/registry.py), since it needs the database.

Reading a document is bounded (size, nesting, YAML aliases): a manifest is loaded by people
with keys, and a 450 KB alias fan-out or 10,000 nested brackets must cost a refusal, not
seconds of CPU or a RecursionError.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from enum import StrEnum
from fnmatch import fnmatchcase
from typing import Annotated, Any, TypeVar

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainValidator, field_validator, model_validator

from agents import conditions
from agents import types as typelang
from agents.vocabulary import Value
from governance.kernel import json_guard

AGENT_ID_PATTERN = r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$"
SEMVER_PATTERN = (
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
_SEMVER = re.compile(SEMVER_PATTERN)


class Permission(StrEnum):
    READ = "read"
    WRITE = "write"
    EXECUTE = "execute"


class Storage(StrEnum):
    SUPABASE = "supabase"
    REDIS = "redis"
    VECTOR = "vector"


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


_V = TypeVar("_V")


def _type_expression(value: _V) -> _V:
    """Refuse a type that does not parse at load time, with the reason and where."""
    if isinstance(value, str):
        try:
            typelang.parse(value)
        except typelang.TypeSyntaxError as exc:
            raise ValueError(f"type does not parse: {exc}") from exc
    return value


Lower = BeforeValidator(_lower)
Expression = Annotated[str, BeforeValidator(_expression)]
TypeExpression = Annotated[
    str, Field(min_length=1, max_length=typelang.MAX_EXPRESSION_LENGTH), BeforeValidator(_type_expression)
]
SchemaName = Annotated[str, Field(pattern=typelang.SCHEMA_NAME.pattern, max_length=100)]


def schema_definition(value: Any) -> str | dict[str, str]:
    """A `schemas:` entry: a type expression, or a mapping of field -> type expression. One
    validator rather than a pydantic union, so that an error's path is the manifest's own
    (`schemas.Options.depth`), not the union member's name."""
    if isinstance(value, str):
        if not value.strip():
            raise ValueError("a schema is a type expression; this one is empty")
        return _type_expression(value)
    if not isinstance(value, dict):
        raise ValueError("a schema is a type expression, or a mapping of field names to type expressions")
    if len(value) > typelang.MAX_FIELDS:
        raise ValueError(f"a schema has at most {typelang.MAX_FIELDS} fields")
    for name, text in value.items():
        if not isinstance(name, str) or not 1 <= len(name) <= 200:
            raise ManifestLocError((str(name),), "a field name is text of 1 to 200 characters")
        if not isinstance(text, str):
            raise ManifestLocError((name,), "a field's type is a type expression (text)")
        try:
            typelang.parse(text)
        except typelang.TypeSyntaxError as exc:
            raise ManifestLocError((name,), f"type does not parse: {exc}") from exc
    return dict(value)


SchemaDefinition = Annotated[
    str | dict[str, str], PlainValidator(schema_definition, json_schema_input_type=str | dict[str, str])
]
ContractName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.:\-]+$", max_length=100)]
Name = Annotated[str, Field(min_length=1, max_length=200)]
AgentId = Annotated[str, Field(pattern=AGENT_ID_PATTERN, max_length=128)]
# An agent id, or a pattern where * stands for any characters (agent.seo.*, *): no other wildcard.
AgentPattern = Annotated[str, Field(pattern=r"^[a-z0-9_.*]+$", max_length=128)]


class _Strict(BaseModel):
    """Unknown keys are refused: a typo such as `rate_limt` must not silently drop a limit."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class InputSpec(_Strict):
    name: Name
    type: TypeExpression = Field(description="Type expression, e.g. z.array(z.string().url())")
    required: bool = True
    description: str = ""


class OutputSpec(_Strict):
    """An output is required unless its type says `.optional()`. ``contract`` (an extension)
    names a contract of the catalog (seed 000) the value must honour, checked on every result."""

    name: Name
    type: TypeExpression | None = None
    contract: ContractName | None = Field(None, description="Extension: a contract of the catalog")
    description: str = ""

    @model_validator(mode="after")
    def _type_or_contract(self) -> OutputSpec:
        if self.type is None and self.contract is None:
            raise ValueError("an output declares a type, a contract, or both")
        return self


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
    contract: ContractName | None = Field(
        None, description="Extension: a contract of the catalog each result of the tool is checked against"
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


SERVED_STORAGES = (Storage.SUPABASE, Storage.VECTOR)
"""The long-term stores the platform serves: its memory is PostgreSQL (what Supabase is) with
pgvector (the vector index), so both names are honoured by the same store. Redis holds no
long-term memory here: a manifest asking for it is refused rather than silently stored elsewhere."""


class LongTermMemory(_Strict):
    enabled: bool = False
    storage: Annotated[Storage, Lower] | None = None

    @field_validator("storage")
    @classmethod
    def _served(cls, storage: Storage | None) -> Storage | None:
        if storage is not None and storage not in SERVED_STORAGES:
            served = ", ".join(s.value for s in SERVED_STORAGES)
            raise ValueError(f"{storage.value} is not a long-term store this platform serves ({served})")
        return storage

    @model_validator(mode="after")
    def _storage_when_enabled(self) -> LongTermMemory:
        if self.enabled and self.storage is None:
            raise ValueError("storage is required when long-term memory is enabled")
        return self


class SharedMemory(_Strict):
    """Inter-agent memory. ``namespaces`` are the domains whose shared learnings the agent reads;
    ``write_namespaces`` the domains, beyond its own, it may write learnings and clarifications
    into; ``watch_notes`` lets it publish fleet-wide watch notes (memory/reach.py ``WriteReach``).
    Both write grants need ``enabled``: they are inter-agent memory too."""

    enabled: bool = False
    namespaces: list[Name] = Field(default_factory=list)
    write_namespaces: list[Name] = Field(default_factory=list)
    watch_notes: bool = False

    @model_validator(mode="after")
    def _writes_need_sharing(self) -> SharedMemory:
        if not self.enabled and (self.write_namespaces or self.watch_notes):
            raise ValueError("write_namespaces and watch_notes write into shared memory: set shared.enabled: true")
        return self


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


class Quotas(_Strict):
    """Extension: how much queued work one agent may pile up, and how many of its requests may wait
    for a reviewer at once (an operator's override of the AGENT_MAX_* settings; absent keys keep
    the setting)."""

    automations: int | None = Field(None, ge=0, le=100_000)
    queued_sessions: int | None = Field(None, ge=0, le=100_000)
    pending_approvals: int | None = Field(None, ge=0, le=100_000)


class AlwaysSend(_Strict):
    """One data command whose answer every prompt of the agent's sessions carries (seed 003's
    ``always_send`` tool data, at level 2): a built-in type (JOBS, SESSIONS, MANIFEST...) and its
    params, run as the agent sees the platform at each call."""

    type: Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_.:\-]*$", max_length=200)]  # a built-in or a tool id
    params: dict[str, Any] = Field(default_factory=dict)


class SessionSettings(_Strict):
    """Extension: this agent's sessions. The limits are seed 003's AILimitsConfig (and the
    watchdog's idle limit), per agent: an absent key keeps the SESSION_* setting."""

    chat_max_autonomous_roundtrips: int | None = Field(
        None, ge=0, le=100_000, description="Round trips a CHAT may make (0: unlimited, as the seed's Int.MAX_VALUE)."
    )
    automation_max_autonomous_roundtrips: int | None = Field(
        None, ge=1, le=100_000, description="Round trips before an AUTOMATION stops with LIMIT_REACHED."
    )
    inactivity_timeout_minutes: int | None = Field(
        None, ge=1, le=60 * 24 * 7, description="Idle minutes before the watchdog closes an AUTOMATION (TIMEOUT)."
    )
    always_send: list[AlwaysSend] = Field(
        default_factory=list, max_length=10, description="Data commands answered in every prompt's level 2."
    )


class EventSettings(_Strict):
    """Extension: the other agents whose platform events (``job.finished``) may reach this agent's
    event automations and event job triggers. Its own events always do, and events of no agent (a
    learning promoted) too; another agent's job, with its intent and outcome, only when named here."""

    subscribe: list[AgentPattern] = Field(
        default_factory=list, max_length=100, description="Agent ids, or patterns with * (agent.seo.*)."
    )


def subscribes(patterns: Iterable[str], agent_id: str) -> bool:
    """Whether ``events.subscribe`` ``patterns`` name ``agent_id``."""
    return any(fnmatchcase(agent_id, pattern) for pattern in patterns)


class Manifest(_Strict):
    id: AgentId
    name: Name
    role: Value = Field(description="A value of the roles registry (GET /api/v1/registries).")
    domain: Value = Field(description="A value of the domains registry.")
    version: Annotated[str, Field(pattern=SEMVER_PATTERN, max_length=100)]
    owner: Name
    schemas: dict[SchemaName, SchemaDefinition] = Field(
        default_factory=dict,
        max_length=typelang.MAX_SCHEMAS,
        description="Extension: named types (a Zod expression, or field -> expression) inputs and outputs may use.",
    )
    inputs: list[InputSpec] = Field(default_factory=list)
    outputs: list[OutputSpec] = Field(default_factory=list)
    tools: list[ToolSpec] = Field(default_factory=list)
    skills: list[SkillRef] = Field(default_factory=list)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    validation: ValidationConfig = Field(default_factory=ValidationConfig)
    escalation: EscalationConfig = Field(default_factory=EscalationConfig)
    kpis: list[KpiSpec] = Field(default_factory=list)
    intents: list[Value] | None = Field(
        None,
        description="Extension: the job intents this agent accepts (values of the intents registry); absent: all.",
    )
    provider_profiles: list[Annotated[str, Field(pattern=r"^[-a-zA-Z0-9_]+$", max_length=100)]] = Field(
        default_factory=list,
        description="Extension: the operator's provider profiles this agent may host its automations on.",
    )
    quotas: Quotas = Field(default_factory=Quotas)
    sessions: SessionSettings = Field(default_factory=SessionSettings)
    events: EventSettings = Field(default_factory=EventSettings)

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

    @model_validator(mode="after")
    def _types_resolve(self) -> Manifest:
        """Named schemas without cycles, and no declared type nested too deeply once they are
        resolved: what the checker walks when a job runs is bounded here, at load (and again with the
        registry's definitions, agents/named_schemas.py)."""
        self.check_resolved({})
        return self

    def named_schemas(self) -> typelang.Schemas:
        try:
            return typelang.compile_schemas(
                {name: typelang.parse_definition(text) for name, text in self.schemas.items()}
            )
        except typelang.SchemaError as exc:
            raise ManifestLocError(exc.loc, str(exc)) from exc

    def undefined_names(self) -> list[tuple[tuple[str | int, ...], str]]:
        """Each schema name a type mentions that `schemas:` does not define, with where it is. They
        must resolve in the registry of named schemas (seed 001's own example names
        `VLevelScoreSchema` without defining it), which the loader asks (agents/registry.py)."""
        found: list[tuple[tuple[str | int, ...], typelang.Type]] = [
            (("schemas", name), typelang.parse_definition(text)) for name, text in self.schemas.items()
        ]
        found += [(("inputs", i, "type"), typelang.parse(spec.type)) for i, spec in enumerate(self.inputs)]
        found += [
            (("outputs", i, "type"), typelang.parse(spec.type)) for i, spec in enumerate(self.outputs) if spec.type
        ]
        return [
            (loc, name)
            for loc, parsed in found
            for name in sorted(typelang.references(parsed))
            if name not in self.schemas
        ]

    def check_resolved(self, registry: dict[str, str | dict[str, str]]) -> None:
        """With ``registry``'s definitions of the names it does not define (its own names win): no
        cycle through them, and no declared type nested too deeply once all are resolved.
        ManifestLocError otherwise, at the schema or the input or output."""
        named = {name: typelang.parse_definition(text) for name, text in {**registry, **self.schemas}.items()}
        try:
            schemas = typelang.compile_schemas(named)
        except typelang.SchemaError as exc:
            raise ManifestLocError(exc.loc, str(exc)) from exc
        declared = [("inputs", i, spec.type) for i, spec in enumerate(self.inputs)]
        declared += [("outputs", i, spec.type) for i, spec in enumerate(self.outputs) if spec.type]
        for section, index, text in declared:
            depth = schemas.depth(typelang.parse(text))
            if depth > typelang.MAX_RESOLVED_DEPTH:
                limit = typelang.MAX_RESOLVED_DEPTH
                msg = f"type nested {depth} levels deep once schemas are resolved (at most {limit})"
                raise ManifestLocError((section, index, "type"), msg)

    def tool(self, tool_id: str) -> ToolSpec | None:
        return next((tool for tool in self.tools if tool.tool_id == tool_id), None)

    def document(self) -> dict[str, Any]:
        """The canonical JSON form: what is stored, hashed, served and diffed."""
        return self.model_dump(mode="json")


class ManifestLocError(ValueError):
    """A refusal that knows where in the manifest it applies (``loc``), raised from a validator
    of the whole model, whose own location is the root."""

    def __init__(self, loc: tuple[str | int, ...], message: str) -> None:
        self.loc = loc
        super().__init__(message)


class ManifestSyntaxError(ValueError):
    """The body is neither JSON nor YAML, or not a mapping, or past the reading limits."""


MAX_DOCUMENT_BYTES = 256 * 1024
MAX_DOCUMENT_DEPTH = 32
MAX_YAML_ALIASES = 100  # anchors and aliases together
# Values in the document once aliases are expanded: 100 aliases can still fan out 10^10, and
# pure-Python YAML costs ~35 µs a value, so this also bounds the time a 256 KiB body can take
# (a shipped manifest has ~150 values).
MAX_YAML_NODES = 10_000


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that counts while it composes: nesting depth, anchors and aliases, and the
    number of values once aliases are expanded (what the construction and every consumer walking
    the result pay). The count is a running total, checked at every value, so a limit stops the
    reading as soon as it is passed, before the construction step where alias bombs cost."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._anchors_and_aliases = 0
        self._values = 0
        self._weights: dict[int, int] = {}  # id(node) -> values in its subtree, aliases expanded

    def _count(self, values: int) -> None:
        self._values += values
        if self._values > MAX_YAML_NODES:
            raise ManifestSyntaxError(f"more than {MAX_YAML_NODES} values (YAML aliases expanded)")

    def fetch_flow_collection_start(self, token_class: type) -> None:
        """Flow nesting (`[[[[...`) is refused by the scanner itself: its look-ahead for simple
        keys grows with the flow level, so waiting for the composer would cost ~1000 levels of
        quadratic scanning first."""
        if self.flow_level >= MAX_DOCUMENT_DEPTH:
            raise ManifestSyntaxError(f"nested deeper than {MAX_DOCUMENT_DEPTH} levels")
        super().fetch_flow_collection_start(token_class)

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]  # types-PyYAML leaves Parser.peek_event unannotated
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            self._anchors_and_aliases += 1
            if self._anchors_and_aliases > MAX_YAML_ALIASES:
                raise ManifestSyntaxError(f"more than {MAX_YAML_ALIASES} YAML anchors and aliases")
        if isinstance(event, yaml.AliasEvent):
            node = super().compose_node(parent, index)
            self._count(self._weights.get(id(node), 1))  # the alias repeats its anchor's whole subtree
            return node
        self._count(1)
        collection = isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent)
        if collection:
            self._depth += 1
            if self._depth > MAX_DOCUMENT_DEPTH:
                raise ManifestSyntaxError(f"nested deeper than {MAX_DOCUMENT_DEPTH} levels")
        node = super().compose_node(parent, index)
        if collection:
            self._depth -= 1
        if isinstance(node, yaml.MappingNode):
            children = [child for pair in node.value for child in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = node.value
        else:
            children = []
        self._weights[id(node)] = 1 + sum(self._weights.get(id(child), 1) for child in children)
        return node


def _check_size(text: str) -> None:
    if len(text) > MAX_DOCUMENT_BYTES or len(text.encode("utf-8")) > MAX_DOCUMENT_BYTES:
        raise ManifestSyntaxError(f"a manifest is at most {MAX_DOCUMENT_BYTES // 1024} KiB")


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


def check_json_depth(text: str) -> None:
    """Refuse JSON text nested deeper than MAX_DOCUMENT_DEPTH before decoding it (the decoder
    would raise RecursionError on deep enough input). Brackets inside strings do not count."""
    depth = 0
    for char in re.sub(r"[^\[\]{}]", "", _JSON_STRING.sub("", text)):
        depth += 1 if char in "[{" else -1
        if depth > MAX_DOCUMENT_DEPTH:
            raise ManifestSyntaxError(f"nested deeper than {MAX_DOCUMENT_DEPTH} levels")


def check_depth(data: Any) -> None:
    """The same limit on an already decoded document (a caller that passes a mapping)."""
    todo = [(data, 1)]
    while todo:
        value, depth = todo.pop()
        if isinstance(value, dict | list):
            if depth > MAX_DOCUMENT_DEPTH:
                raise ManifestSyntaxError(f"nested deeper than {MAX_DOCUMENT_DEPTH} levels")
            children = value.values() if isinstance(value, dict) else value
            todo.extend((child, depth + 1) for child in children)


def read_json(text: str) -> dict[str, Any]:
    """Parse a JSON document, within the size and depth limits, into a manifest mapping."""
    _check_size(text)
    check_json_depth(text)
    try:
        data = json_guard.decode(text)  # NUL characters and non-finite numbers: BodyErrors
    except json.JSONDecodeError as exc:
        raise ManifestSyntaxError(f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from exc
    except RecursionError as exc:  # not reachable past check_json_depth; never a 500 if it were
        raise ManifestSyntaxError(f"nested deeper than {MAX_DOCUMENT_DEPTH} levels") from exc
    return unwrap(data)


def read_text(text: str) -> dict[str, Any]:
    """Parse a JSON or YAML document (JSON is YAML) into a mapping, unwrapping `Agent:`, within
    the size, depth and alias limits."""
    _check_size(text)
    try:
        data = yaml.load(text, Loader=_BoundedLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise ManifestSyntaxError(f"not valid YAML or JSON: {exc}") from exc
    except RecursionError as exc:
        raise ManifestSyntaxError(f"nested deeper than {MAX_DOCUMENT_DEPTH} levels") from exc
    return unwrap(data)


def unwrap(data: Any) -> dict[str, Any]:
    if isinstance(data, dict) and set(data) == {"Agent"}:
        data = data["Agent"]
    if not isinstance(data, dict):
        raise ManifestSyntaxError("a manifest is a mapping of fields (optionally under an `Agent:` root)")
    check_depth(data)
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
