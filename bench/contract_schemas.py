"""The contracts of seed 000 as a tree of fields, and as JSON Schemas for the baselines of
``python -m bench contracts``. A helper module, not a benchmark (it has no ``run``).

The schemas are generated from the very ``FieldRule`` objects the validator compiles, so the three
engines judge the same contract. The mapping follows the validator's semantics rather than the
seed's words wherever the two could differ, because the benchmark checks that the engines agree:

* a required field goes into its parent's ``required``; alternatives (``answer``/``text``) and
  cross-row groups (``priority``/``priority_delta``) become ``anyOf`` of ``required``; a
  conditional field becomes ``if`` (the sibling's value is listed) / ``then`` (``required``);
* ``[*]`` becomes ``items``, a dotted path nested ``properties``; an intermediate object that has
  no row of its own (``intent`` in ``intent.label``) is an ``object`` (an ``array`` before ``[*]``),
  never ``null``, and is required when a required field lies under it (not for an implicit or a
  conditional one): the validator reports ``intent.label`` missing when ``intent`` is;
* bounds become ``minimum``/``maximum``, closed enums ``enum``, "non vide" ``minLength: 1`` plus
  ``pattern: \\S`` (the validator strips whitespace), a numeric id ``integer``;
* what the validator only warns about is left open: an optional field may be ``null`` ("treated as
  absent"), an open enum (``…``) lists nothing, an implicit requirement is not required, unknown
  fields are allowed (no ``additionalProperties``);
* ``serializable`` and free values are ``{}``: anything parsed from JSON is serializable; an
  "autres champs" row gives ``additionalProperties`` its type (the seed's two are serializable).

Only keywords that draft-07 and 2020-12 share are used, so fastjsonschema (drafts 4/6/7) compiles
the same document as jsonschema's ``Draft202012Validator``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from governance.contracts.catalog import parse
from governance.contracts.rules import Condition, FieldRule, Kind, Requirement, TypeRule, rule_from_row
from governance.contracts.validator import split_path

# The project's copy of seed 000 (what import_contracts loads), the same bytes as the seed.
CATALOG = Path(__file__).resolve().parent.parent / "governance" / "catalog" / "llm_output_contracts.md"
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
DRAFT_07 = "http://json-schema.org/draft-07/schema#"
NOT_BLANK = r"\S"

LIST_KINDS = (Kind.LIST, Kind.LIST_OF_STRINGS, Kind.LIST_OF_MAPPINGS, Kind.LIST_OF_MAPPINGS_OR_STRINGS)


@dataclass
class Node:
    """One place in an output: the rules of the value found there and the fields below it."""

    rules: list[FieldRule] = field(default_factory=list)
    props: dict[str, Node] = field(default_factory=dict)
    items: Node | None = None  # the element of a list (a ``[*]`` segment)
    required: list[str] = field(default_factory=list)
    alternatives: list[tuple[str, ...]] = field(default_factory=list)  # one of them must be present
    conditionals: list[tuple[Condition, str]] = field(default_factory=list)
    demanded: list[str] = field(default_factory=list)  # required (not implicit, not a group) fields here

    def child(self, segment: str) -> Node:
        if segment == "*":
            self.items = self.items or Node()
            return self.items
        return self.props.setdefault(segment, Node())

    @property
    def type(self) -> TypeRule | None:
        """The first row's type: no catalog contract gives one path two rows."""
        return self.rules[0].type if self.rules else None

    @property
    def owned(self) -> bool:
        """A row of the catalog describes this place itself (``intention``, not ``intent``)."""
        return bool(self.rules)

    def demand(self) -> str | None:
        """Where the validator reports a missing required field under this place when the place
        itself is absent (``.label`` for ``intent``): None when nothing required lies under it
        through places without a row of their own."""
        if self.demanded:
            return "." + self.demanded[0]
        for name, child in self.props.items():
            if not child.owned and (below := child.demand()) is not None:
                return f".{name}{below}"
        if self.items is not None and (below := self.items.demand()) is not None:
            return "[*]" + below
        return None


@dataclass
class Contract:
    name: str
    section: str
    rules: list[FieldRule]
    root: Node
    whole: list[FieldRule]  # "_toute réponse_" rows: about the output itself
    others: list[FieldRule]  # "autres champs" rows: the type of every undeclared top-level field


def load_catalog(path: Path = CATALOG) -> list[Contract]:
    """Every contract of the seed document, read by the project's own catalog reader and rules."""
    contracts = []
    for doc in parse(path.read_text(encoding="utf-8")):
        rules = [rule_from_row(row.path, row.type, row.required, row.effect) for row in doc.rows]
        whole = [r for r in rules if r.whole_output]
        others = [r for r in rules if r.other_fields]
        contracts.append(Contract(doc.name, doc.section, rules, build_tree(rules), whole, others))
    return contracts


def pieces(rule: FieldRule) -> Iterator[tuple[str, ...]]:
    """The paths that are checked together, as ``compile_contract`` splits a row: independent
    optional fields under different parents apart, alternatives (same parent) together."""
    parents = {split_path(p)[:-1] for p in rule.paths}
    if len(parents) > 1 and not rule.alternatives:
        yield from ((p,) for p in rule.paths)
    else:
        yield rule.paths


def build_tree(rules: list[FieldRule]) -> Node:
    root = Node()
    groups: dict[str, tuple[Node, list[str]]] = {}
    for rule in rules:
        if rule.whole_output or rule.other_fields:
            continue
        for paths in pieces(rule):
            segments = [split_path(p) for p in paths]
            parent = root
            for segment in segments[0][:-1]:
                parent = parent.child(segment)
            names = tuple(s[-1] for s in segments)
            for name in names:
                parent.child(name).rules.append(rule)
            if rule.group:
                groups.setdefault(rule.group, (parent, []))[1].extend(names)
            elif rule.requirement is Requirement.YES:
                parent.demanded.append(names[0])
                if len(names) > 1:
                    parent.alternatives.append(names)
                else:
                    parent.required.append(names[0])
            elif rule.requirement is Requirement.CONDITIONAL and rule.condition is not None:
                parent.conditionals.extend((rule.condition, name) for name in names)
    for parent, names in groups.values():
        parent.alternatives.append(tuple(names))
    return root


# --- JSON Schema --------------------------------------------------------------------------------


def value_schema(rule: TypeRule) -> dict[str, Any]:
    """What the validator's per-kind check accepts, as JSON Schema keywords."""
    kind = rule.kind
    bounds = {k: v for k, v in (("minimum", rule.minimum), ("maximum", rule.maximum)) if v is not None}
    if kind is Kind.STRING:
        schema: dict[str, Any] = {"type": "string"}
        if rule.non_empty:
            schema |= {"minLength": 1, "pattern": NOT_BLANK}
        if rule.enum and not rule.enum_open:
            schema["enum"] = list(rule.enum)
        return schema
    if kind is Kind.NUMBER:
        return {"type": "number", **bounds}
    if kind is Kind.INTEGER:
        return {"type": "integer", **bounds}
    if kind is Kind.NUMERIC_ID:
        return {"type": "integer"}
    if kind is Kind.ID:  # pattern applies to strings only: a non-blank string or an integer
        return {"type": ["string", "integer"], "pattern": NOT_BLANK}
    if kind is Kind.BOOLEAN:
        return {"type": "boolean"}
    if kind is Kind.NUMBER_OR_STRING:
        return {"type": ["number", "string"]}
    if kind is Kind.PATH:
        return {"type": ["string", "array"], "pattern": NOT_BLANK, "items": {"type": ["string", "integer"]}}
    if kind is Kind.LIST:
        return {"type": "array"}
    if kind is Kind.LIST_OF_STRINGS:
        return {"type": "array", "items": {"type": "string"}}
    if kind is Kind.LIST_OF_MAPPINGS:
        return {"type": "array", "items": {"type": "object"}}
    if kind is Kind.LIST_OF_MAPPINGS_OR_STRINGS:
        return {"type": "array", "items": {"type": ["object", "string"]}}
    if kind is Kind.MAPPING:
        return {"type": "object"}
    return {}  # SERIALIZABLE, ANY: every JSON value


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """An optional field given ``null`` is only a warning for the validator ("treated as absent")."""
    if "type" not in schema:
        return schema
    types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    out = {**schema, "type": [*types, "null"]}
    if "enum" in out:
        out["enum"] = [*out["enum"], None]
    return out


def merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """Both constraints on one value: the keywords side by side when they do not clash (``items``
    merged recursively), ``allOf`` for what does."""
    out = dict(base)
    clash: dict[str, Any] = {}
    for key, value in extra.items():
        if key not in out:
            out[key] = value
        elif out[key] == value:
            continue
        elif key == "items":
            out[key] = merge(out[key], value)
        else:
            clash[key] = value
    if clash:
        out["allOf"] = [*out.get("allOf", []), clash]
    return out


def node_schema(node: Node, element: bool = False) -> dict[str, Any]:
    """``element``: the node is a list's ``[*]``, whose type is the list's row (the validator skips
    an element of the wrong type when no row describes the list's items)."""
    schema: dict[str, Any] = {}
    if not node.owned and not element:  # on the way to described fields: an object, a list before [*]
        schema["type"] = "array" if node.items is not None else "object"
    for rule in node.rules:
        value = value_schema(rule.type)
        schema = merge(schema, nullable(value) if rule.requirement is Requirement.NO else value)
    if node.props:
        schema = merge(schema, {"properties": {name: node_schema(child) for name, child in node.props.items()}})
    if node.items is not None:
        schema = merge(schema, {"items": node_schema(node.items, element=True)})
    required = node.required + [n for n, c in node.props.items() if not c.owned and c.demand() is not None]
    if required:
        schema = merge(schema, {"required": list(dict.fromkeys(required))})
    extra = [{"anyOf": [{"required": [name]} for name in names]} for names in node.alternatives]
    for condition, name in node.conditionals:
        trigger = {"properties": {condition.field: {"enum": list(condition.values)}}, "required": [condition.field]}
        extra.append({"if": trigger, "then": {"required": [name]}})
    if len(extra) == 1:
        schema = merge(schema, extra[0])
    elif extra:
        schema = merge(schema, {"allOf": extra})
    return schema


def json_schema(contract: Contract, draft: str = DRAFT_2020_12) -> dict[str, Any]:
    """The contract as one JSON Schema document: the output is an object (the validator says
    ``expected an object`` otherwise, and the one whole-output row of the seed wants a mapping)."""
    schema = node_schema(contract.root)  # the root has no row: an object
    for rule in contract.whole:
        schema = merge(schema, value_schema(rule.type)) if rule.type.kind is not Kind.MAPPING else schema
    for rule in contract.others:
        if other := value_schema(rule.type):
            schema = merge(schema, {"additionalProperties": other})
    return {"$schema": draft, "title": contract.name, **schema}
