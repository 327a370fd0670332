"""A reviewer's edit of a tool call's arguments: what it changes, and whether the tool takes it.

A reviewer may approve a tool call with other arguments than the agent asked for (issue 37). The
agent must then be told exactly what changed, and the edited arguments must be ones the tool
accepts, so an approval is never spent on a call the upstream refuses. Changes are named by JSON
Pointer (RFC 6901), as JSON Schema names where a value fails; the arguments are checked with the
``jsonschema`` library (which the MCP SDK depends on), in the dialect the schema names, else
2020-12, the dialect MCP gives a tool's ``inputSchema`` when it names none. No reference is ever
fetched: a schema that points outside itself cannot be used, and says so.

Pure: no Django import.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import SchemaError
from referencing.exceptions import Unresolvable

MAX_VIOLATIONS = 20  # a page and an answer name this many; the first ones are the ones to fix


def pointer(path: list[str | int] | tuple[str | int, ...]) -> str:
    """The JSON Pointer of ``path`` within the arguments; ``/`` for the arguments themselves
    (RFC 6901 writes that as the empty string, which reads as nothing on a page)."""
    if not path:
        return "/"
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


def changes(before: Any, after: Any, path: tuple[str | int, ...] = ()) -> list[dict[str, Any]]:
    """What turns ``before`` into ``after``, each change at its pointer: ``add`` (with ``after``),
    ``remove`` (with ``before``) or ``replace`` (both). Objects are compared key by key and lists
    item by item, so a change deep inside reads as that change and not as a new whole."""
    if isinstance(before, dict) and isinstance(after, dict):
        found = []
        for key in sorted(before.keys() | after.keys()):
            if key not in after:
                found.append({"op": "remove", "path": pointer((*path, key)), "before": before[key]})
            elif key not in before:
                found.append({"op": "add", "path": pointer((*path, key)), "after": after[key]})
            else:
                found += changes(before[key], after[key], (*path, key))
        return found
    if isinstance(before, list) and isinstance(after, list):
        found = []
        for index in range(max(len(before), len(after))):
            if index >= len(after):
                found.append({"op": "remove", "path": pointer((*path, index)), "before": before[index]})
            elif index >= len(before):
                found.append({"op": "add", "path": pointer((*path, index)), "after": after[index]})
            else:
                found += changes(before[index], after[index], (*path, index))
        return found
    if _canonical(before) == _canonical(after):
        return []
    return [{"op": "replace", "path": pointer(path), "before": before, "after": after}]


def _canonical(value: Any) -> str:
    # As the arguments' hash sees them (1 and 1.0 differ, key order does not).
    return json.dumps(value, sort_keys=True, default=str)


def describe(found: list[dict[str, Any]]) -> str:
    """The changes in one line, as an agent's model reads them: ``/limit: 100 -> 10; /dry: added true``."""

    def shown(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, default=str)

    words = {
        "add": lambda change: f"added {shown(change['after'])}",
        "remove": lambda change: f"removed (was {shown(change['before'])})",
        "replace": lambda change: f"{shown(change['before'])} -> {shown(change['after'])}",
    }
    return "; ".join(f"{change['path']}: {words[change['op']](change)}" for change in found)


@dataclass(frozen=True)
class Violation:
    """Where the arguments fail the tool's input schema, and why, in the validator's words."""

    path: tuple[str | int, ...]
    message: str

    @property
    def at(self) -> str:
        return pointer(self.path)


def violations(arguments: Any, schema: dict[str, Any]) -> list[Violation]:
    """Every place ``arguments`` fails ``schema`` (at most MAX_VIOLATIONS, by path);
    none when they pass. A schema that is not valid JSON Schema, or that refers to a document
    outside itself, is one violation at ``/``: nothing can be checked against it, so nothing passes."""
    checker = validators.validator_for(schema, default=Draft202012Validator)
    try:
        checker.check_schema(schema)
        errors = list(checker(schema).iter_errors(arguments))
    except SchemaError as exc:
        return [Violation((), f"the tool's input schema is not valid JSON Schema ({exc.message})")]
    except Unresolvable as exc:
        return [Violation((), f"the tool's input schema refers to what it does not hold ({exc})")]
    found = [Violation(tuple(error.absolute_path), error.message) for error in errors]
    # Indices before keys at each level, so a path sorts whatever its parts' types.
    return sorted(found, key=lambda one: [(1, p) if isinstance(p, str) else (0, p) for p in one.path])[:MAX_VIOLATIONS]
