"""The manifest registry: validate, version and activate agent manifests.

Rules (seed 001 + issue): versions only go up; re-sending the active version is a no-op;
the same version with other content, or a lower version, is refused (409); old versions stay.
Every schema name a manifest's types use resolves, in its own `schemas:` or in the registry of
named schemas, or the load is refused (422 at the name's path); a stored version keeps the
registry definitions it resolved (agents/named_schemas.py says why).
"""

from __future__ import annotations

import functools
from typing import Any

import pydantic
from django.db import IntegrityError, transaction

from agents import named_schemas, registries, skills
from agents import types as typelang
from agents.manifest import (
    Manifest,
    ManifestLocError,
    ManifestSyntaxError,
    content_hash,
    read_json,
    read_text,
    unwrap,
    version_key,
)
from agents.models import Agent, AgentManifest, ManifestKpi, ManifestTool
from agents.vocabulary import Registry, Value
from governance.contracts.models import Contract
from governance.kernel import json_guard
from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Conflict, Forbidden, InvalidInput, NotFound
from governance.kernel.principals import Principal
from governance.kernel.services import record


def validation_errors(exc: pydantic.ValidationError, prefix: tuple = ("body",)) -> list[dict[str, Any]]:
    """pydantic errors as problem+json entries, each with the field path a client sent (a
    whole-model validator that knows a deeper path says it with ManifestLocError)."""
    entries = []
    for err in exc.errors():
        cause = (err.get("ctx") or {}).get("error")
        loc = [*err["loc"], *cause.loc] if isinstance(cause, ManifestLocError) else err["loc"]
        entries.append({"loc": [*prefix, *loc], "msg": err["msg"], "type": err["type"]})
    return entries


def require_manifest_permission(actor: Principal) -> None:
    """Who may load manifests: operators with agents.change_agent (and the system). Checked
    before a body is even parsed, so a caller without the right cannot make the server work."""
    if actor.is_agent or (actor.is_operator and not actor.has_perm("agents.change_agent")):
        raise Forbidden("Loading manifests needs the agents.change_agent permission.")


def parse_manifest(source: str | dict, *, agent_id: str | None = None, json_text: bool = False) -> Manifest:
    """A Manifest from YAML text (JSON text with ``json_text``) or an already-decoded mapping;
    InvalidInput otherwise, nothing written. Reading is bounded (see agents.manifest)."""
    try:
        if not isinstance(source, str):
            data = unwrap(source)
        elif json_text:
            data = read_json(source)
        else:
            data = read_text(source)
    except ManifestSyntaxError as exc:
        raise InvalidInput(str(exc), errors=[{"loc": ["body"], "msg": str(exc), "type": "manifest_syntax"}]) from exc
    except json_guard.BodyErrors as exc:
        raise InvalidInput("The request is invalid; see errors.", errors=exc.errors) from exc
    try:
        manifest = Manifest.model_validate(data)
    except pydantic.ValidationError as exc:
        # Every error at once: the values the registries do not have, among the others.
        errors = validation_errors(exc) + registries.problems(_raw_registry_uses(data))
        raise InvalidInput("The manifest is invalid.", errors=errors) from exc
    if agent_id is not None and manifest.id != agent_id:
        msg = f"manifest id {manifest.id!r} does not match the agent {agent_id!r} in the URL"
        raise InvalidInput(msg, errors=[{"loc": ["body", "id"], "msg": msg, "type": "id_mismatch"}])
    _check_contracts(manifest)
    _check_skills(manifest)
    return manifest


def _check_contracts(manifest: Manifest) -> None:
    """Every contract an output or a tool names is in the catalog (seed 000) now: a typo would
    otherwise surface only when the first result is checked."""
    named = [(["body", "outputs", i, "contract"], spec.contract) for i, spec in enumerate(manifest.outputs)]
    named += [(["body", "tools", i, "contract"], spec.contract) for i, spec in enumerate(manifest.tools)]
    named = [(loc, name) for loc, name in named if name]
    if not named:
        return
    names = {name for _, name in named}
    known = set(Contract.objects.filter(name__in=names, is_current=True).values_list("name", flat=True))
    errors = [
        {"loc": loc, "msg": f"no contract {name!r} in the catalog", "type": "unknown_contract"}
        for loc, name in named
        if name not in known
    ]
    if errors:
        raise InvalidInput("The manifest names contracts the catalog does not have.", errors=errors)


_VALUE = pydantic.TypeAdapter(Value)


def _raw_registry_uses(data: dict[str, Any]) -> list[registries.Use]:
    """The role, domain and intents of a document that failed validation elsewhere, those of a
    registry value's shape (a misshapen one has its own error already)."""
    named: list[tuple[Registry, Any, tuple[str | int, ...]]] = [
        (Registry.ROLES, data.get("role"), ("body", "role")),
        (Registry.DOMAINS, data.get("domain"), ("body", "domain")),
    ]
    intents = data.get("intents")
    if isinstance(intents, list):
        named += [(Registry.INTENTS, intent, ("body", "intents", i)) for i, intent in enumerate(intents)]
    uses = []
    for registry, value, loc in named:
        try:
            uses.append(registries.Use(registry, _VALUE.validate_python(value), loc))
        except pydantic.ValidationError:
            continue
    return uses


def _check_registries(manifest: Manifest) -> None:
    """The role, domain and intents are values of their registries, active ones (one query). Run
    when a version is stored, not when the active one is sent again: a retired domain refuses a
    new version, never the agent that already has it."""
    uses = [
        registries.Use(Registry.ROLES, manifest.role, ("body", "role")),
        registries.Use(Registry.DOMAINS, manifest.domain, ("body", "domain")),
        *(
            registries.Use(Registry.INTENTS, intent, ("body", "intents", i))
            for i, intent in enumerate(manifest.intents or [])
        ),
    ]
    registries.check(uses)


def _check_skills(manifest: Manifest) -> None:
    """Every required skill is registered, enabled, and granted the tools it needs: an agent is
    never activated with a skill it could not run."""
    errors = skills.manifest_skill_errors(manifest)
    if errors:
        raise InvalidInput("The manifest requires skills it cannot run.", errors=errors)


def manifest_warnings(manifest: Manifest) -> list[dict[str, Any]]:
    """What loads but is not enforced (optional skills the registry cannot run), with body paths.
    Schema names are not among them: one that resolves nowhere refuses the manifest."""
    return skills.manifest_skill_warnings(manifest)


def _locked_agent(agent_id: str) -> Agent:
    """The agent row, created on first manifest, locked so concurrent loads take turns."""
    try:
        with transaction.atomic():
            Agent.objects.get_or_create(agent_id=agent_id)
    except IntegrityError:
        pass  # created by a concurrent load in the meantime
    return Agent.objects.select_for_update(of=("self",)).select_related("active_manifest").get(agent_id=agent_id)


def _same_content(row: AgentManifest, digest: str) -> bool:
    """Whether ``row`` holds the manifest whose canonical form hashes to ``digest``. A row stored
    before the schema gained a field has another canonical form for the same content: it is
    compared after re-validation, so an upgrade never makes an unchanged manifest "conflict"."""
    return row.content_hash == digest or content_hash(Manifest.model_validate(row.document).document()) == digest


# Not durable: load_demo runs each app's demo, which calls this, in one transaction.
@transaction.atomic
def store_manifest(manifest: Manifest, *, actor: Principal) -> tuple[AgentManifest, bool]:
    """Store and activate ``manifest``. Returns (row, created); created is False for a no-op."""
    require_manifest_permission(actor)
    agent = _locked_agent(manifest.id)
    document = manifest.document()
    digest = content_hash(document)
    active = agent.active_manifest
    if active is not None and active.version == manifest.version and _same_content(active, digest):
        return active, False
    _check_registries(manifest)
    registry_schemas = named_schemas.snapshot(manifest)
    same_version = agent.manifests.filter(version=manifest.version).first()
    if same_version is not None and not _same_content(same_version, digest):
        raise Conflict(
            f"Version {manifest.version} of {manifest.id} already exists with different content; "
            "bump the version to change the manifest.",
            agent_id=manifest.id,
            version=manifest.version,
        )
    if active is not None and version_key(manifest.version) <= version_key(active.version):
        raise Conflict(
            f"Version {manifest.version} is not above the active version {active.version}; versions only go up.",
            agent_id=manifest.id,
            version=manifest.version,
            active_version=active.version,
        )
    major, minor, patch, *_ = version_key(manifest.version)
    row = AgentManifest.objects.create(
        agent=agent,
        version=manifest.version,
        version_major=major,
        version_minor=minor,
        version_patch=patch,
        document=document,
        content_hash=digest,
        registry_schemas=registry_schemas,
        created_by=actor.label,
    )
    ManifestTool.objects.bulk_create(
        ManifestTool(
            manifest=row,
            tool_id=tool.tool_id,
            permission=tool.permissions.value,
            rate_limit=tool.rate_limit,
            requires_approval=bool(tool.requires_approval),
            contract=tool.contract or "",
        )
        for tool in manifest.tools
    )
    ManifestKpi.objects.bulk_create(
        ManifestKpi(
            manifest=row,
            metric_id=kpi.metric_id,
            target=kpi.target,
            threshold_warning=kpi.threshold_warning,
            threshold_critical=kpi.threshold_critical,
            unit=kpi.unit,
            direction=kpi.direction.value,
        )
        for kpi in manifest.kpis
    )
    previous = active.version if active else None
    agent.active_manifest = row
    agent.name, agent.role, agent.domain, agent.owner = (
        manifest.name,
        manifest.role,
        manifest.domain,
        manifest.owner,
    )
    agent.save(update_fields=["active_manifest", "name", "role", "domain", "owner"])
    record(actor=actor, action=AuditAction.MANIFEST_ACTIVATED, target=row, version=manifest.version, previous=previous)
    return row, True


def load_manifest(source: str | dict, *, actor: Principal, agent_id: str | None = None) -> tuple[AgentManifest, bool]:
    require_manifest_permission(actor)
    return store_manifest(parse_manifest(source, agent_id=agent_id), actor=actor)


@functools.lru_cache(maxsize=4096)
def manifest_document(manifest_id: int) -> dict[str, Any]:
    """A manifest's document, read once per process: stored versions never change (a change is
    a new version, a new row), so the cache can never be stale. Treat the result as read-only."""
    return AgentManifest.objects.values_list("document", flat=True).get(pk=manifest_id)


@functools.lru_cache(maxsize=4096)
def manifest_tools(manifest_id: int) -> dict[str, ManifestTool]:
    """A stored manifest's tool entries by tool_id, read once per process (stored versions never
    change, see manifest_document): every governed tool call reads them. Read-only."""
    return {tool.tool_id: tool for tool in ManifestTool.objects.filter(manifest_id=manifest_id)}


@functools.lru_cache(maxsize=4096)
def manifest_kpis(manifest_id: int) -> tuple[ManifestKpi, ...]:
    """A stored manifest's KPIs, read once per process (stored versions never change, see
    manifest_document): every result samples them and judges them again. Read-only."""
    return tuple(ManifestKpi.objects.filter(manifest_id=manifest_id))


@functools.lru_cache(maxsize=4096)
def manifest_types(manifest_id: int) -> typelang.ManifestTypes:
    """The declared inputs and outputs of a stored manifest, its names resolved as they were when
    it was stored (its registry snapshot), parsed once per process (stored versions never change,
    see manifest_document)."""
    snapshot = AgentManifest.objects.values_list("registry_schemas", flat=True).get(pk=manifest_id)
    return typelang.from_document(manifest_document(manifest_id), snapshot)


def manifest_for(agent: Agent, version: str | None = None) -> AgentManifest:
    """The active manifest, or the given version; NotFound when there is none."""
    if version is None:
        if agent.active_manifest_id is None:
            raise NotFound(f"Agent {agent.agent_id!r} has no active manifest.")
        return agent.active_manifest
    found = agent.manifests.filter(version=version).first()
    if found is None:
        raise NotFound(f"Agent {agent.agent_id!r} has no manifest version {version!r}.")
    return found
