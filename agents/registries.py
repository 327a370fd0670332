"""The registries of the fleet's vocabulary (domains, job intents, entity types, agent roles): the
one service that adds, relabels and retires their values, and the checks every taker of a value
runs. Not to be confused with agents/registry.py, the registry of manifests.

Writes: operators with the registry's model permission (``agents.add_intent`` to add an intent,
``agents.change_intent`` to retire or relabel one), the system (the demo, commands run without
``--actor``); never an agent. Each write is one transaction with its audit row; a write that
changes nothing (adding a value twice, retiring a retired one) writes nothing. Adding a retired
value again reinstates it, which is a change: it needs the change permission too.

Checks: manifests (agents/registry.py), job admissions (agents/jobs/submission.py, so POST /jobs,
/jobs/validate, MCP submit_job, triggers, escalations and follow-ups alike), learnings
(memory/learnings.py) and triggers (agents/triggers.py) hand every value they take to ``check``,
which asks the database once for all of them (one UNION ALL over the four small tables) and
refuses, at each value's path, one that is unknown or retired. Rows that already carry a retired
value are never checked again: they stay readable, listable and usable as they are.

The seeds' values (agents/vocabulary.py ``SEED_VALUES``) are added by migration agents 0016, and
again after every migrate (``seed_after_migrate``) for test databases flushed between tests;
``bulk_create(ignore_conflicts=True)`` never undoes an operator's retirement or label.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic
from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction
from django.utils import timezone

from agents.models import AgentRole, Domain, EntityType, Intent
from agents.models.registries import RegistryEntry
from agents.vocabulary import (
    SEED_VALUES,
    ExactValue,
    Label,
    Registry,
    default_label,
    retired_message,
    unknown_message,
)
from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Forbidden, InvalidInput, NotFound
from governance.kernel.principals import SYSTEM, Principal
from governance.kernel.services import record

MODELS: dict[Registry, type[RegistryEntry]] = {
    Registry.DOMAINS: Domain,
    Registry.INTENTS: Intent,
    Registry.ENTITY_TYPES: EntityType,
    Registry.ROLES: AgentRole,
}
_VALUE = pydantic.TypeAdapter(ExactValue)
_LABEL = pydantic.TypeAdapter(Label)


def registry_named(name: str) -> Registry:
    """The registry an API path or a command names; NotFound for any other name."""
    try:
        return Registry(name)
    except ValueError:
        names = ", ".join(registry.value for registry in Registry)
        raise NotFound(f"No registry {name!r}; the registries are {names}.") from None


def permission(registry: Registry, action: str) -> str:
    """``agents.add_intent``, ``agents.change_entitytype``...: the model permission of ``action``."""
    return f"agents.{action}_{MODELS[registry]._meta.model_name}"


def refuse_agents(actor: Principal) -> None:
    """Agents read the registries and never change them (the API says so before it even looks
    at which registry a path names)."""
    if actor.is_agent:
        raise Forbidden("Agents read the registries; operators with the registry's permissions change them.")


def _require(actor: Principal, registry: Registry, action: str) -> None:
    refuse_agents(actor)
    perm = permission(registry, action)
    if actor.is_operator and not actor.has_perm(perm):
        raise Forbidden(f"Changing the {registry} registry needs the {perm} permission.")


def _valid(adapter: pydantic.TypeAdapter, value: Any, field: str) -> Any:
    try:
        return adapter.validate_python(value)
    except pydantic.ValidationError as exc:
        errors = [{"loc": ["body", field, *e["loc"]], "msg": e["msg"], "type": e["type"]} for e in exc.errors()]
        raise InvalidInput(f"The {field} is invalid.", errors=errors) from exc


# Writes -----------------------------------------------------------------------------------------


ADDED, REINSTATED, UNCHANGED = "added", "reinstated", "unchanged"


# Not durable: the admin's change form and load_demo call it inside their own transaction.
@transaction.atomic
def add_value(
    registry: Registry, value: str, *, actor: Principal, label: str | None = None
) -> tuple[RegistryEntry, str]:
    """Add ``value`` (labelled ``label``, else after itself) to ``registry``. Returns the entry and
    what happened: ``added``; ``unchanged`` for a value already there (its label kept:
    relabelling is its own write); ``reinstated`` for a retired one, usable again."""
    _require(actor, registry, "add")
    value = _valid(_VALUE, value, "value")
    label = _valid(_LABEL, label, "label") if label is not None else default_label(value)
    model = MODELS[registry]
    entry, created = model._default_manager.get_or_create(
        value=value, defaults={"label": label, "created_by": actor.label}
    )
    if created:
        record(
            actor=actor,
            action=AuditAction.REGISTRY_ADDED,
            target=entry,
            registry=registry.value,
            value=value,
            label=label,
        )
        return entry, ADDED
    if not entry.retired:
        return entry, UNCHANGED
    _require(actor, registry, "change")
    entry = model._default_manager.select_for_update().get(pk=entry.pk)
    if not entry.retired:  # reinstated by someone else in the meantime
        return entry, UNCHANGED
    entry.retired_at, entry.retired_by = None, ""
    entry.save(update_fields=["retired_at", "retired_by"])
    record(actor=actor, action=AuditAction.REGISTRY_REINSTATED, target=entry, registry=registry.value, value=value)
    return entry, REINSTATED


def _locked(registry: Registry, value: str) -> RegistryEntry:
    entry = MODELS[registry]._default_manager.select_for_update().filter(value=value).first()
    if entry is None:
        raise NotFound(f"No {registry.singular} {value!r} in the {registry} registry.")
    return entry


@transaction.atomic(durable=True)
def retire_value(registry: Registry, value: str, *, actor: Principal) -> RegistryEntry:
    """Refuse new use of ``value``; everything that already has it keeps it. Never a delete."""
    _require(actor, registry, "change")
    entry = _locked(registry, value)
    if not entry.retired:
        entry.retired_at, entry.retired_by = timezone.now(), actor.label
        entry.save(update_fields=["retired_at", "retired_by"])
        record(actor=actor, action=AuditAction.REGISTRY_RETIRED, target=entry, registry=registry.value, value=value)
    return entry


# Not durable: the admin's change form calls it inside Django's own transaction.
@transaction.atomic
def relabel_value(registry: Registry, value: str, label: str, *, actor: Principal) -> RegistryEntry:
    """Give ``value`` another label (what pages show); the value itself never changes."""
    _require(actor, registry, "change")
    label = _valid(_LABEL, label, "label")
    entry = _locked(registry, value)
    if entry.label != label:
        previous, entry.label = entry.label, label
        entry.save(update_fields=["label"])
        record(
            actor=actor,
            action=AuditAction.REGISTRY_RELABELLED,
            target=entry,
            registry=registry.value,
            value=value,
            previous=previous,
            label=label,
        )
    return entry


def seed(*, actor: Principal = SYSTEM) -> None:
    """The seeds' values, where missing (four inserts; an existing row is left as it is)."""
    for registry, values in SEED_VALUES.items():
        MODELS[registry]._default_manager.bulk_create(
            [MODELS[registry](value=value, label=label, created_by=actor.label) for value, label in values],
            ignore_conflicts=True,
        )


def seed_after_migrate(sender: Any, using: str = DEFAULT_DB_ALIAS, **kwargs: Any) -> None:
    """After every migrate of the agents app, and after a flush (test databases); not after a
    migrate to a point before the registries existed."""
    tables = set(connections[using].introspection.table_names())
    if all(model._meta.db_table in tables for model in MODELS.values()):
        seed()


# Reads ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One value as it is read: the API's item, a form's choice."""

    value: str
    label: str
    retired: bool


def _union(selects: Sequence[tuple[Registry, str, list[Any]]]) -> list[tuple[Any, ...]]:
    """One UNION ALL of ``SELECT <registry>, <columns> FROM <table> <where>`` per registry."""
    if not selects:
        return []
    parts, params = [], []
    for registry, tail, tail_params in selects:
        parts.append(
            f"SELECT %s::text AS registry, value, label, retired_at IS NOT NULL AS retired "
            f"FROM {MODELS[registry]._meta.db_table} {tail}"
        )
        params += [registry.value, *tail_params]
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(parts) + " ORDER BY 1, 2", params)
        return cursor.fetchall()


def listing(registries: Iterable[Registry] = tuple(Registry)) -> dict[Registry, list[Entry]]:
    """Every value of each registry (retired ones too, marked), by value; one query."""
    wanted = list(registries)
    found: dict[Registry, list[Entry]] = {registry: [] for registry in wanted}
    for name, value, label, retired in _union([(registry, "", []) for registry in wanted]):
        found[Registry(name)].append(Entry(value, label, retired))
    return found


def active_values(registry: Registry) -> list[str]:
    return [entry.value for entry in listing([registry])[registry] if not entry.retired]


def labels(registries: Iterable[Registry] = tuple(Registry)) -> dict[str, dict[str, str]]:
    """``{"roles": {"executor": "Executor", ...}, ...}`` for pages that show values by their label."""
    return {registry.value: {e.value: e.label for e in entries} for registry, entries in listing(registries).items()}


def choices(registry: Registry, current: str = "", *, entries: list[Entry] | None = None) -> list[tuple[str, str]]:
    """A form's choices: active values by label, then retired ones marked (rows keep them, so a
    filter still finds them), and ``current`` if the registry does not have it (an older row).
    ``entries``: the registry's ``listing``, when the caller read it already."""
    if entries is None:
        entries = listing([registry])[registry]
    found = [(e.value, e.label) for e in entries if not e.retired]
    found += [(e.value, f"{e.label} (retired)") for e in entries if e.retired]
    if current and current not in {e.value for e in entries}:
        found.append((current, current))
    return found


@dataclass(frozen=True)
class Use:
    """One value something is about to take, and where it sits in what was sent."""

    registry: Registry
    value: str
    loc: tuple[str | int, ...]


def problems(uses: Iterable[Use]) -> list[dict[str, Any]]:
    """What is wrong with ``uses``: one problem+json error per unknown or retired value, at its
    path (empty when all are active). One query, whatever the number of values."""
    wanted = list(uses)
    values: dict[Registry, set[str]] = {}
    for use in wanted:
        values.setdefault(use.registry, set()).add(use.value)
    rows = _union([(registry, "WHERE value = ANY(%s)", [sorted(found)]) for registry, found in values.items()])
    retired = {(Registry(name), value): is_retired for name, value, _, is_retired in rows}
    errors = []
    for use in wanted:
        state = retired.get((use.registry, use.value))
        if state is None:
            msg, kind = unknown_message(use.registry, use.value), "registry_unknown"
        elif state:
            msg, kind = retired_message(use.registry, use.value), "registry_retired"
        else:
            continue
        errors.append({"loc": list(use.loc), "msg": msg, "type": kind, "registry": use.registry.value})
    return errors


def check(uses: Iterable[Use]) -> None:
    """InvalidInput (422) naming each unknown or retired value of ``uses``; nothing otherwise."""
    errors = problems(uses)
    if errors:
        detail = errors[0]["msg"] if len(errors) == 1 else f"{len(errors)} values are not in use in the registries."
        raise InvalidInput(detail[0].upper() + detail[1:], errors=errors)
