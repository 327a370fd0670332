"""The skill registry (seed 001 "Skills EXECUTENT"): skills, their versions and the tools they need.

A manifest's ``skills`` name what the agent runs. A required skill must be in this registry,
enabled, and every tool it needs must be granted by that same manifest; this is checked when the
manifest is loaded (``manifest_skill_errors``), so an agent is never activated with a skill it
could not run, and again at every job admission (``unusable_required_skills``), since the registry
changes after a manifest loads. An optional skill that is missing only warns.

Skills change like manifests do: a new version replaces the row, the same version with other
content or a lower version is refused, so two catalogs that disagree cannot silently undo each
other. The shipped catalog (``CATALOG``) is added after every migrate (``seed_after_migrate``), as
Django adds permissions: the shipped manifests then load on any install, and on a test database
flushed between tests. Operators edit skills in the admin or import YAML (``manage.py
import_skills``), both through ``save_skill``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import pydantic
import yaml
from django.db import transaction
from pydantic import Field

from agents.manifest import SEMVER_PATTERN, Manifest, _Strict, version_key
from agents.models import Skill
from agents.models.skill import SKILL_ID_PATTERN
from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Conflict, Forbidden, InvalidInput
from governance.kernel.principals import Principal
from governance.kernel.services import record

CATALOG = Path(__file__).resolve().parent / "catalog" / "skills.yaml"

ToolId = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.:\-]+$", max_length=200)]


class SkillSpec(_Strict):
    """One skill as a catalog file writes it."""

    skill_id: Annotated[str, Field(pattern=SKILL_ID_PATTERN, max_length=200)]
    version: Annotated[str, Field(pattern=SEMVER_PATTERN, max_length=100)]
    description: Annotated[str, Field(max_length=4000)] = ""
    tools: Annotated[list[ToolId], Field(max_length=200)] = Field(default_factory=list)

    @pydantic.field_validator("version", mode="before")
    @classmethod
    def _version_as_text(cls, value: Any) -> Any:
        return value.strip() if isinstance(value, str) else value

    @pydantic.field_validator("tools")
    @classmethod
    def _unique_tools(cls, tools: list[str]) -> list[str]:
        if len(set(tools)) != len(tools):
            raise ValueError("a tool is listed twice")
        return tools

    def same_content(self, skill: Skill) -> bool:
        return (skill.version, skill.description, list(skill.tools)) == (self.version, self.description, self.tools)


class SkillCatalog(_Strict):
    skills: list[SkillSpec]


def parse_catalog(text: str) -> list[SkillSpec]:
    """The skills of a YAML catalog (``skills: [...]``); InvalidInput with each field's path."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InvalidInput("The skill catalog is not valid YAML.", errors=[_error(["skills"], str(exc))]) from exc
    try:
        catalog = SkillCatalog.model_validate(data)
    except pydantic.ValidationError as exc:
        errors = [_error(list(err["loc"]), err["msg"], err["type"]) for err in exc.errors()]
        raise InvalidInput("The skill catalog is invalid.", errors=errors) from exc
    seen: set[str] = set()
    for index, spec in enumerate(catalog.skills):
        if spec.skill_id in seen:
            raise InvalidInput(
                "The skill catalog lists a skill twice.",
                errors=[_error(["skills", index, "skill_id"], f"{spec.skill_id!r} is listed twice", "duplicate")],
            )
        seen.add(spec.skill_id)
    return catalog.skills


def _error(loc: list[Any], msg: str, kind: str = "skill_catalog") -> dict[str, Any]:
    return {"loc": loc, "msg": msg, "type": kind}


def _require_permission(actor: Principal, perm: str) -> None:
    if actor.is_agent or (actor.is_operator and not actor.has_perm(perm)):
        raise Forbidden(f"Managing skills needs the {perm} permission.")


def version_problem(existing: Skill, spec: SkillSpec) -> str | None:
    """Why ``spec`` may not replace the registered ``existing`` (versions only go up, and a
    version's content never changes), or None."""
    if spec.version == existing.version and not spec.same_content(existing):
        return (
            f"Version {spec.version} of skill {spec.skill_id} already exists with other content; "
            "bump the version to change the skill."
        )
    if version_key(spec.version) < version_key(existing.version):
        return f"Version {spec.version} is below the registered version {existing.version}; versions only go up."
    return None


# Not durable: import_skills and the admin's change form call it inside their own transaction.
@transaction.atomic
def save_skill(spec: SkillSpec, *, actor: Principal, enabled: bool | None = None) -> tuple[Skill, str]:
    """Create or move ``spec``'s skill to its version. Returns the row and what happened:
    "created", "updated", or "unchanged" (the same version and content: a no-op)."""
    existing = Skill.objects.select_for_update().filter(skill_id=spec.skill_id).first()
    _require_permission(actor, "agents.add_skill" if existing is None else "agents.change_skill")
    if existing is not None:
        toggled = enabled is not None and enabled != existing.enabled
        if spec.same_content(existing) and not toggled:
            return existing, "unchanged"
        problem = version_problem(existing, spec)
        if problem:
            raise Conflict(problem, skill_id=spec.skill_id, version=spec.version, registered_version=existing.version)
    skill = existing or Skill(skill_id=spec.skill_id)
    previous = None if existing is None else existing.version
    skill.version, skill.description, skill.tools = spec.version, spec.description, spec.tools
    if enabled is not None:
        skill.enabled = enabled
    skill.updated_by = actor.label
    skill.save()
    outcome, action = (
        ("created", AuditAction.SKILL_CREATED) if existing is None else ("updated", AuditAction.SKILL_UPDATED)
    )
    record(
        actor=actor,
        action=action,
        target=skill,
        version=skill.version,
        previous=previous,
        enabled=skill.enabled,
    )
    return skill, outcome


@dataclass
class ImportReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)


@transaction.atomic(durable=True)
def import_skills(text: str, *, actor: Principal) -> ImportReport:
    """A whole YAML catalog, in one transaction: one refused skill leaves the registry as it was."""
    _require_permission(actor, "agents.add_skill")
    report = ImportReport()
    for spec in parse_catalog(text):
        _, outcome = save_skill(spec, actor=actor)
        getattr(report, outcome).append(spec.skill_id)
    return report


def _required_skill_problems(required: list[tuple[int, str]], granted: set[str]) -> list[tuple[int, str, str]]:
    """(index, message, kind) for each required skill that cannot run under a manifest granting ``granted``: not in
    the registry, disabled, or needing a tool the manifest does not grant. One query; none without required skills."""
    if not required:
        return []
    registry = {s.skill_id: s for s in Skill.objects.filter(skill_id__in=[skill_id for _, skill_id in required])}
    problems = []
    for index, skill_id in required:
        skill = registry.get(skill_id)
        if skill is None:
            problems.append((index, f"no skill {skill_id!r} in the skill registry", "unknown_skill"))
        elif not skill.enabled:
            problems.append((index, f"skill {skill_id!r} is disabled in the skill registry", "disabled_skill"))
        else:
            problems += [
                (
                    index,
                    f"skill {skill_id!r} needs the tool {tool!r}, which this manifest does not grant",
                    "tool_not_granted",
                )
                for tool in skill.tools
                if tool not in granted
            ]
    return problems


def manifest_skill_errors(manifest: Manifest) -> list[dict[str, Any]]:
    """Why the manifest's required skills cannot run, each at its ``skills[i]`` path."""
    required = [(i, ref.skill_id) for i, ref in enumerate(manifest.skills) if ref.required]
    granted = {tool.tool_id for tool in manifest.tools}
    return [
        _error(["body", "skills", index, "skill_id"], message, kind)
        for index, message, kind in _required_skill_problems(required, granted)
    ]


def unusable_required_skills(document: dict[str, Any]) -> list[str]:
    """Why a stored manifest's required skills cannot run today. The registry changes after a manifest loads (a
    skill's new version needs another tool, a skill is disabled), so admission asks again each time."""
    refs = document.get("skills") or []
    required = [(i, ref["skill_id"]) for i, ref in enumerate(refs) if ref.get("required", True)]
    granted = {tool["tool_id"] for tool in document.get("tools") or []}
    return [message for _, message, _ in _required_skill_problems(required, granted)]


def manifest_skill_warnings(manifest: Manifest) -> list[dict[str, Any]]:
    """Optional skills the registry does not know, or knows disabled: loaded, but said."""
    optional = [(i, ref.skill_id) for i, ref in enumerate(manifest.skills) if not ref.required]
    if not optional:
        return []
    usable = set(
        Skill.objects.filter(skill_id__in=[skill_id for _, skill_id in optional], enabled=True).values_list(
            "skill_id", flat=True
        )
    )
    return [
        _error(
            ["body", "skills", i, "skill_id"],
            f"optional skill {skill_id!r} is not usable in the registry",
            "optional_skill",
        )
        for i, skill_id in optional
        if skill_id not in usable
    ]


@dataclass(frozen=True)
class AgentSkill:
    """One of a manifest's skills as the agent page shows it."""

    skill_id: str
    required: bool
    skill: Skill | None

    @property
    def status(self) -> str:
        if self.skill is None:
            return "not registered"
        return "ready" if self.skill.enabled else "disabled"


def skills_of(document: dict[str, Any]) -> list[AgentSkill]:
    """A stored manifest document's skills, with what the registry says of each (one query)."""
    refs = document.get("skills") or []
    registry = {s.skill_id: s for s in Skill.objects.filter(skill_id__in=[ref["skill_id"] for ref in refs])}
    return [AgentSkill(ref["skill_id"], bool(ref.get("required", True)), registry.get(ref["skill_id"])) for ref in refs]


def seed_after_migrate(sender: Any, **kwargs: Any) -> None:
    """Add the shipped skills that are missing. ``get_or_create`` by id: an operator's edits (a
    newer version, a disabled skill) are never undone."""
    for spec in parse_catalog(CATALOG.read_text(encoding="utf-8")):
        Skill.objects.get_or_create(
            skill_id=spec.skill_id,
            defaults={
                "version": spec.version,
                "description": spec.description,
                "tools": spec.tools,
                "updated_by": "system",
            },
        )
