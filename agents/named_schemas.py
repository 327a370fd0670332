"""The registry of named schemas (agents/models/schemas.py): the one service that adds, changes and
retires them, and the resolution every manifest load runs.

Resolution: a name a manifest's type mentions resolves to the manifest's own ``schemas:`` first,
else to an active entry here, and the names that entry mentions resolve the same way (the
manifest's names still first). A name that resolves nowhere refuses the manifest (422 at its
path, agents/registry.py). What a stored version resolved is snapshotted with it
(``AgentManifest.registry_schemas``, what ``resolve`` returns) rather than looked up when a job
runs: editing or retiring an entry never silently changes the contract of a version already
stored, active or not; an agent gets the new definition by loading a new version. The document
itself stays what its author sent (its hash, its diff, a re-send of the active version a no-op).

Writes: operators with ``agents.add_namedschema`` (a new name) or ``agents.change_namedschema``
(a new definition, label or description, retiring, reinstating), the system (seeds, commands);
never an agent. Each write is one transaction with its audit row; a save that changes nothing
writes nothing. A definition is checked as a manifest's ``schemas:`` entry is (it parses, within
the same bounds), and the names it mentions must resolve in the registry without a cycle.

The seeds' entries (``SEED``: the three seed 001's example names, and the two the shipped
manifests name) are added by migration agents 0017, and again after every migrate
(``seed_after_migrate``) for test databases flushed between tests; ``ignore_conflicts`` never
undoes an operator's edit or retirement.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.utils import timezone

from agents import types as typelang
from agents.manifest import Manifest, ManifestLocError, schema_definition
from agents.models import NamedSchema
from agents.models.schemas import MAX_NAME_LENGTH
from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Forbidden, InvalidInput, NotFound
from governance.kernel.principals import SYSTEM, Principal
from governance.kernel.services import record

Definition = str | dict[str, str]

SEED: dict[str, tuple[str, str, Definition]] = {
    "VLevelScoreSchema": (
        "V-level score",
        "Seed 001's agent.seo.vlevel output: the V-level (V1 to V5) one URL scored.",
        {"url": "z.string().url()", "level": "z.enum(['V1', 'V2', 'V3', 'V4', 'V5'])"},
    ),
    "VLevelOptionsSchema": (
        "V-level options",
        "Seed 001's agent.seo.vlevel optional configuration; the seed names no settings, so any object.",
        "z.record(z.unknown())",
    ),
    "RecommendationSchema": (
        "Recommendation",
        "Seed 001's agent.seo.vlevel improvement recommendation: text.",
        "z.string().min(1)",
    ),
    "EscalationSchema": (
        "Escalation",
        "What an escalated job hands its target agent (agents/escalations.py): the expressions that fired.",
        {
            "fromJob": "z.string().optional()",
            "fromAgent": "z.string().optional()",
            "triggers": "z.array(z.string())",
            "output": "z.unknown().optional()",
        },
    ),
    "RagDocumentSchema": (
        "RAG document",
        "A document to index; seed 001 defers its fields to the RAG seed, so any object.",
        "z.record(z.unknown())",
    ),
}


def _require(actor: Principal, action: str) -> None:
    if actor.is_agent:
        raise Forbidden("Agents read named schemas; operators with the named schema permissions change them.")
    perm = f"agents.{action}_namedschema"
    if actor.is_operator and not actor.has_perm(perm):
        raise Forbidden(f"Changing the named schemas needs the {perm} permission.")


def _error(loc: list[str | int], msg: str, kind: str) -> InvalidInput:
    return InvalidInput(msg[0].upper() + msg[1:] + ".", errors=[{"loc": ["body", *loc], "msg": msg, "type": kind}])


def _valid_name(name: Any) -> str:
    if not isinstance(name, str) or len(name) > MAX_NAME_LENGTH or not typelang.SCHEMA_NAME.match(name):
        raise _error(["name"], "a schema name is letters, digits and _, not starting with a digit", "schema_name")
    return name


def valid_definition(name: str, definition: Any) -> Definition:
    """``definition`` as a manifest's ``schemas:`` entry would be read, its names resolving in the
    registry (``name`` itself as ``definition``) without a cycle or too deep a nesting."""
    try:
        definition = schema_definition(definition)
    except ManifestLocError as exc:
        raise _error(["definition", *exc.loc], str(exc), "schema_definition") from exc
    except ValueError as exc:
        raise _error(["definition"], str(exc), "schema_definition") from exc
    found, missing = resolve(typelang.references(typelang.parse_definition(definition)), defined={name: definition})
    if missing:
        msg = f"no named schema {sorted(missing)[0]!r} in the registry (or it is retired)"
        raise _error(["definition"], msg, "undefined_schema")
    try:
        typelang.compile_schemas({n: typelang.parse_definition(d) for n, d in {**found, name: definition}.items()})
    except typelang.SchemaError as exc:
        raise _error(["definition"], str(exc), "schema_cycle") from exc
    return definition


# Writes -----------------------------------------------------------------------------------------


# Not durable: the admin's change form calls it inside Django's own transaction.
@transaction.atomic
def save_schema(
    name: str, definition: Any, *, actor: Principal, label: str | None = None, description: str | None = None
) -> tuple[NamedSchema, str]:
    """Add ``name``, or give it another definition, label or description. Returns the entry and
    what happened: ``added``, ``changed``, ``reinstated`` (a retired entry saved again, usable
    again) or ``unchanged``. Stored manifest versions keep the definition they resolved."""
    _require(actor, "add")
    name = _valid_name(name)
    definition = valid_definition(name, definition)
    entry = NamedSchema.objects.select_for_update().filter(name=name).first()
    if entry is None:
        entry = NamedSchema.objects.create(
            name=name,
            definition=definition,
            label=(label or name)[:200],
            description=description or "",
            created_by=actor.label,
        )
        record(actor=actor, action=AuditAction.SCHEMA_ADDED, target=entry, name=name, definition=definition)
        return entry, "added"
    changes = {
        "definition": definition,
        "label": entry.label if label is None else label[:200],
        "description": entry.description if description is None else description,
    }
    changed = [field for field, value in changes.items() if getattr(entry, field) != value]
    if not changed and not entry.retired:
        return entry, "unchanged"
    _require(actor, "change")
    previous = entry.definition
    for field, value in changes.items():
        setattr(entry, field, value)
    outcome, action = (
        ("reinstated", AuditAction.SCHEMA_REINSTATED) if entry.retired else ("changed", AuditAction.SCHEMA_CHANGED)
    )
    entry.retired_at, entry.retired_by = None, ""
    entry.save(update_fields=[*changes, "retired_at", "retired_by"])
    record(actor=actor, action=action, target=entry, name=name, definition=definition, previous=previous)
    return entry, outcome


@transaction.atomic(durable=True)
def retire_schema(name: str, *, actor: Principal) -> NamedSchema:
    """Refuse ``name`` to manifests loaded from now on; stored versions keep its definition."""
    _require(actor, "change")
    entry = NamedSchema.objects.select_for_update().filter(name=name).first()
    if entry is None:
        raise NotFound(f"No named schema {name!r}.")
    if not entry.retired:
        entry.retired_at, entry.retired_by = timezone.now(), actor.label
        entry.save(update_fields=["retired_at", "retired_by"])
        record(actor=actor, action=AuditAction.SCHEMA_RETIRED, target=entry, name=name)
    return entry


def seed(*, actor: Principal = SYSTEM) -> None:
    """The seeds' entries, where missing (one insert; an existing row is left as it is)."""
    NamedSchema.objects.bulk_create(
        [
            NamedSchema(name=name, label=label, description=description, definition=definition, created_by=actor.label)
            for name, (label, description, definition) in SEED.items()
        ],
        ignore_conflicts=True,
    )


def seed_after_migrate(sender: Any, using: str = DEFAULT_DB_ALIAS, **kwargs: Any) -> None:
    """After every migrate of the agents app and after a flush; not before the table exists."""
    if NamedSchema._meta.db_table in connections[using].introspection.table_names():
        seed()


# Resolution -------------------------------------------------------------------------------------


def resolve(
    names: Iterable[str], *, defined: Mapping[str, Any] | None = None
) -> tuple[dict[str, Definition], set[str]]:
    """The active registry definitions of ``names`` and of every name they mention in turn, those
    ``defined`` elsewhere (the manifest's own) excepted; and the names that resolve nowhere. One
    query per level of reference, the levels bounded by the registry's resolved depth."""
    defined = defined or {}
    found: dict[str, Definition] = {}
    missing: set[str] = set()
    wanted = {name for name in names if name not in defined}
    while wanted:
        rows = dict(
            NamedSchema.objects.filter(name__in=sorted(wanted), retired_at__isnull=True).values_list(
                "name", "definition"
            )
        )
        missing |= wanted - set(rows)
        found.update(rows)
        mentioned = set().union(*(typelang.references(typelang.parse_definition(d)) for d in rows.values()))
        wanted = mentioned - set(found) - missing - set(defined)
    return found, missing


def snapshot(manifest: Manifest) -> dict[str, Definition]:
    """The registry definitions ``manifest`` resolves to, to store with it. InvalidInput (422) at
    each path that names a schema resolving nowhere, or when the resolved types cycle or nest too
    deeply."""
    uses = manifest.undefined_names()
    found, missing = resolve({name for _, name in uses}, defined=manifest.schemas)
    errors: list[dict[str, Any]] = [
        {
            "loc": ["body", *loc],
            "msg": f"schema {name!r} is defined neither in `schemas:` nor in the registry of named schemas",
            "type": "undefined_schema",
        }
        for loc, name in uses
        if name in missing
    ]
    if missing - {name for _, name in uses}:  # reached only through a registry entry's own names
        names = ", ".join(sorted(missing - {name for _, name in uses}))
        msg = f"registry schemas the manifest uses name schemas that resolve nowhere: {names}"
        errors.append({"loc": ["body"], "msg": msg, "type": "undefined_schema"})
    if errors:
        detail = errors[0]["msg"] if len(errors) == 1 else f"{len(errors)} schema names resolve nowhere."
        raise InvalidInput(detail[0].upper() + detail[1:], errors=errors)
    try:
        manifest.check_resolved(found)
    except ManifestLocError as exc:
        loc = ["body", *exc.loc]
        raise InvalidInput(str(exc), errors=[{"loc": loc, "msg": str(exc), "type": "schema"}]) from exc
    return found
