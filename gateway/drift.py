"""What changed in an upstream's tool list since an operator approved it (the "rug pull").

A tool's definition is what an agent's model reads of it: its name, title, description, input and
output schemas, annotations and execution hints, as MCP lists them. Its digest is the SHA-256 of
their canonical JSON, so the same definition always has the same digest whatever the order of
its keys. ``plan`` compares a listing with the approved digests and the definitions already
waiting for a reviewer, and says which tools an agent may see and which changes are new (each
opens one review item, however often the same listing comes back).

Pure: no Django.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# The fields of a listed tool a model reads, in MCP's wire names: the definition that is pinned,
# and the only fields of an upstream tool an agent is shown.
FIELDS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations", "execution")
ABSENT = ""  # the digest of a tool an operator approved the removal of

FIRST, ADDED, CHANGED, REMOVED = "first", "added", "changed", "removed"


def definition(listed: Mapping[str, Any]) -> dict[str, Any]:
    """The pinned fields of a tool as MCP lists it (wire names, nothing empty)."""
    return {key: listed[key] for key in FIELDS if listed.get(key) is not None}


def storable(value: Any) -> Any:
    """``value`` as PostgreSQL's JSON stores it and a page shows it: a NUL character becomes the
    text ``\\u0000``, a lone surrogate its escape (non-finite numbers are already null in the
    JSON form of a listed tool). An upstream is not trusted to send only what the database takes;
    what an agent is shown is this form too, so the digest is taken of it."""
    if isinstance(value, str):
        return value.replace("\x00", "\\u0000").encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {storable(key): storable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [storable(item) for item in value]
    return value


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(definition: Mapping[str, Any]) -> str:
    """SHA-256 of the definition's canonical JSON (sorted keys, no spaces, UTF-8)."""
    return hashlib.sha256(canonical(definition).encode()).hexdigest()


def changed_fields(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[str]:
    """The pinned fields whose value differs (all the present ones for a tool added or removed)."""
    old, new = old or {}, new or {}
    return [key for key in FIELDS if old.get(key) != new.get(key)]


def diff(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[str]:
    """A unified diff of the two definitions as indented JSON, one list item per line: what a
    reviewer reads. Either side may be None (added, removed)."""

    def lines(value: Mapping[str, Any] | None) -> list[str]:
        return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False).splitlines() if value else []

    return list(difflib.unified_diff(lines(old), lines(new), "approved", "listed now", lineterm="", n=3))


@dataclass(frozen=True)
class Change:
    """A definition nobody decided on yet: ``digest`` is ``ABSENT`` for a tool that disappeared."""

    tool: str
    kind: str  # FIRST, ADDED, CHANGED or REMOVED
    digest: str


@dataclass(frozen=True)
class Plan:
    admitted: frozenset[str]  # the listed tools whose definition is the approved one
    changes: list[Change] = field(default_factory=list)  # each opens one review (FIRST: pinned unless flagged)


def plan(listed: Mapping[str, str], approved: Mapping[str, str], known: set[tuple[str, str]], *, first: bool) -> Plan:
    """``listed``: tool -> digest of what the upstream lists now; ``approved``: tool -> approved
    digest (``ABSENT`` for an approved removal); ``known``: (tool, digest) pairs already waiting
    for a reviewer or rejected, which open nothing again; ``first``: no listing of the server was
    pinned yet (its registration approves what it lists first)."""
    admitted = frozenset(name for name, found in listed.items() if approved.get(name) == found)
    changes = []
    for name, found in sorted(listed.items()):
        if name in admitted or (name, found) in known:
            continue
        kind = FIRST if first else ADDED if approved.get(name, ABSENT) == ABSENT else CHANGED
        changes.append(Change(name, kind, found))
    for name, pinned in sorted(approved.items()):
        if pinned != ABSENT and name not in listed and (name, ABSENT) not in known:
            changes.append(Change(name, REMOVED, ABSENT))
    return Plan(admitted, changes)
