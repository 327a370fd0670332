"""Spec audit: does a prompt ask the model for what the contract needs? (seed 000's first use:
"auditer rapidement les spécifications de prompts").

Input is what a prompt declares about its output: a JSON Schema, or an example JSON answer. Both
are reduced to declared paths (``rankings[*].id``) with the JSON types they allow, then compared
with the contract's rules: required fields the prompt never asks for, fields it asks for that the
contract does not know, and types that disagree. Pure: no Django.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from governance.contracts.rules import FieldRule, Kind, Requirement
from governance.contracts.validator import type_name

JSON_TYPES = {
    Kind.STRING: {"string"},
    Kind.NUMBER: {"number", "integer"},
    Kind.INTEGER: {"integer"},
    Kind.BOOLEAN: {"boolean"},
    Kind.LIST: {"array"},
    Kind.LIST_OF_STRINGS: {"array"},
    Kind.LIST_OF_MAPPINGS: {"array"},
    Kind.LIST_OF_MAPPINGS_OR_STRINGS: {"array"},
    Kind.MAPPING: {"object"},
    Kind.NUMBER_OR_STRING: {"number", "integer", "string"},
    Kind.NUMERIC_ID: {"integer"},
    Kind.ID: {"string", "integer"},
    Kind.PATH: {"string", "array"},
}
SCHEMA_KEYS = {"$schema", "properties", "items", "anyOf", "oneOf", "allOf"}


@dataclass
class SpecAudit:
    missing_required: list[dict[str, Any]] = field(default_factory=list)
    unknown_fields: list[dict[str, Any]] = field(default_factory=list)
    type_mismatches: list[dict[str, Any]] = field(default_factory=list)


def is_schema(document: Any) -> bool:
    """A JSON Schema says so with its keywords; anything else is an example answer."""
    return isinstance(document, dict) and (
        bool(SCHEMA_KEYS & document.keys()) or document.get("type") in {"object", "array"}
    )


def _json_type(value: Any) -> str:
    """JSON Schema's name for a value's type (the validator's names, with "array" for lists)."""
    name = type_name(value)
    return {"list": "array"}.get(name, name)


def _join(parent: str, key: str) -> str:
    return f"{parent}.{key}" if parent else key


Declared = dict[str, set[str]]  # path -> JSON types (and "enum:<value>" markers)


def from_example(value: Any, path: str = "", out: Declared | None = None) -> Declared:
    out = {} if out is None else out
    if path:
        out.setdefault(path, set()).add(_json_type(value))
    if isinstance(value, dict):
        for key, item in value.items():
            from_example(item, _join(path, str(key)), out)
    elif isinstance(value, list):
        for item in value:
            from_example(item, f"{path}[*]", out)
    return out


def from_schema(schema: Any, path: str = "", out: Declared | None = None) -> Declared:
    out = {} if out is None else out
    if not isinstance(schema, dict):
        return out
    for combined in ("anyOf", "oneOf", "allOf"):
        for option in schema.get(combined, []) or []:
            from_schema(option, path, out)
    declared = schema.get("type")
    types = set(declared) if isinstance(declared, list) else ({declared} if isinstance(declared, str) else set())
    if "properties" in schema:
        types.add("object")
    if "items" in schema:
        types.add("array")
    if "enum" in schema and isinstance(schema["enum"], list):
        types |= {_json_type(v) for v in schema["enum"]} | {f"enum:{v}" for v in schema["enum"]}
    if path:
        out.setdefault(path, set()).update(types)
    for key, sub in (schema.get("properties") or {}).items():
        from_schema(sub, _join(path, key), out)
    if isinstance(schema.get("items"), dict):
        from_schema(schema["items"], f"{path}[*]", out)
    return out


def _ancestors(path: str) -> Iterable[str]:
    while True:
        cut = max(path.rfind("."), path.rfind("[*]"))
        if cut <= 0:
            return
        path = path[:cut]
        yield path


def audit(rules: Sequence[FieldRule], document: Any) -> SpecAudit:
    declared = from_schema(document) if is_schema(document) else from_example(document)
    report = SpecAudit()
    fields = [r for r in rules if not r.whole_output and not r.other_fields]
    open_root = any(r.other_fields or r.whole_output for r in rules)
    known: dict[str, FieldRule] = {p: r for r in fields for p in r.paths}
    with_children = {a for p in known for a in _ancestors(p)}
    prefixes = set(known) | with_children

    grouped: list[FieldRule] = [r for r in fields if r.group]
    for rule in fields:
        if rule.group or rule.requirement not in (Requirement.YES, Requirement.CONDITIONAL):
            continue
        if not any(p in declared for p in rule.paths):
            entry = {"path": " or ".join(rule.paths), "required": rule.requirement.value, "effect": rule.effect}
            report.missing_required.append(entry)
    if grouped and not any(p in declared for r in grouped for p in r.paths):
        paths = " or ".join(p for r in grouped for p in r.paths)
        report.missing_required.append({"path": paths, "required": "yes", "effect": grouped[0].effect})

    for path in sorted(declared):
        if path in prefixes:
            continue
        opaque = any(a in known and a not in with_children for a in _ancestors(path))
        if not opaque and not (open_root and "." not in path and "[" not in path):
            report.unknown_fields.append({"path": path})

    for path, types in sorted(declared.items()):
        if path not in known or known[path].type.kind not in JSON_TYPES:
            continue
        rule = known[path]
        plain = {t for t in types if not t.startswith("enum:")} - {"null"}
        expected = JSON_TYPES[rule.type.kind]
        if plain and not plain <= expected:
            report.type_mismatches.append({"path": path, "expected": rule.type.describe(), "declared": sorted(plain)})
            continue
        values = {t[5:] for t in types if t.startswith("enum:")}
        if rule.type.enum and not rule.type.enum_open and values - set(rule.type.enum):
            report.type_mismatches.append({"path": path, "expected": rule.type.describe(), "declared": sorted(values)})
    return report
