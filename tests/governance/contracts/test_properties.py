"""Property-based tests of the validators the service runs (generated code), for every contract of seed 000.

From a contract's FieldRules, a Hypothesis strategy builds outputs that honour it: required fields
present, one member at least of each alternative, conditional fields present when their trigger
says so, values of the right kind inside their bounds and enums, list items of the right shape,
optional fields sometimes there. The validator must find nothing in them. Then exactly one thing is
changed (a required field dropped, a value of the wrong type, out of range, outside its enum, empty,
an item of a list broken, a field added...) and the validator must report exactly that finding, with
its concrete path, and nothing else.
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from governance.contracts.codegen import compile_contract
from governance.contracts.rules import FieldRule, Kind, Requirement, rule_from_row
from governance.contracts.validator import Report, split_path
from tests.governance.contracts.validators import CONTRACTS

NAMES = [c.name for c in CONTRACTS]
RULES = {c.name: [rule_from_row(r.path, r.type, r.required, r.effect) for r in c.rows] for c in CONTRACTS}
VALIDATORS = {name: compile_contract(rules) for name, rules in RULES.items()}

# The ids "the input offered": existing numeric ids, aliases and recognised task names.
KNOWN_IDS = frozenset({"1", "2", "3", "m0", "m1", "m2", "consolidate", "decay"})
NUMERIC_IDS = [1, 2, 3]
ALIASES_OR_IDS = ["m0", "m1", "m2", 1, 2, 3]
TASK_ALIASES = ["consolidate", "decay"]
EXTRA = "zz_extra"  # a key no contract declares

PROPERTY_SETTINGS = settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


# --- The shape of a contract, as a tree of its paths -----------------------------------------------


@dataclass
class Node:
    """One path of the contract: the row that checks it (None for an object no row describes, such
    as `intent` of `intent.label`), its named children and the shape of its items (``[*]``)."""

    rule: FieldRule | None = None
    children: dict[str, Node] = field(default_factory=dict)
    item: Node | None = None


@dataclass
class Shape:
    root: Node
    whole_output: FieldRule | None
    open_root: bool  # "autres champs": undeclared top-level fields are part of the contract
    groups: dict[str, list[str]]  # cross-row alternatives: group -> field names, in row order


def shape_of(rules: list[FieldRule]) -> Shape:
    root = Node()
    whole = None
    open_root = False
    groups: dict[str, list[str]] = {}
    for rule in rules:
        if rule.whole_output:
            whole = rule
            continue
        if rule.other_fields:
            open_root = True
            continue
        for path in rule.paths:
            node = root
            for segment in split_path(path):
                if segment == "*":
                    node.item = node.item or Node()
                    node = node.item
                else:
                    node = node.children.setdefault(segment, Node())
            assert node.rule is None, f"two rows for {path}"
            node.rule = rule
            if rule.group:
                groups.setdefault(rule.group, []).append(split_path(path)[-1])
    return Shape(root, whole, open_root, groups)


SHAPES = {name: shape_of(rules) for name, rules in RULES.items()}


def _needed(rule: FieldRule | None) -> bool:
    return rule is not None and rule.requirement in (Requirement.YES, Requirement.IMPLICIT)


def _has_needed_child(node: Node) -> bool:
    return any(
        _needed(child.rule) or (child.rule is None and _has_needed_child(child)) for child in node.children.values()
    )


def _choice_key(rule: FieldRule | None) -> tuple[str, Any] | None:
    """Fields of one choice: the members of an alternative, or of a cross-row group."""
    if rule is None:
        return None
    if rule.group:
        return ("group", rule.group)
    if rule.alternatives:
        return ("alternative", id(rule))
    return None


# --- Strategies ----------------------------------------------------------------------------------

TEXT = st.text(max_size=8)
NON_EMPTY_TEXT = st.text(min_size=1, max_size=8).filter(lambda s: s.strip() != "")
FINITE = st.floats(allow_nan=False, allow_infinity=False)
JSON_SCALARS = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | FINITE | TEXT
JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)
JSON_NOT_NULL = JSON.filter(lambda v: v is not None)
JSON_OBJECTS = st.dictionaries(TEXT, JSON, max_size=3)


def _bounded_number(rule: FieldRule) -> st.SearchStrategy[float | int]:
    low, high = rule.type.minimum, rule.type.maximum
    floats = st.floats(min_value=low, max_value=high, allow_nan=False, allow_infinity=False)
    ints = st.integers(
        min_value=None if low is None else math.ceil(low), max_value=None if high is None else math.floor(high)
    )
    return floats | ints


@dataclass(frozen=True)
class Options:
    optional: st.SearchStrategy[bool]  # whether an optional field is there
    min_items: int  # the least number of items of a generated list


def _keyed_objects(keys: tuple[str, ...]) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries({}, optional=dict.fromkeys(keys, JSON))


def _value(draw: Callable, node: Node, options: Options) -> Any:
    """A value that honours the node's row, built from its children when it has some."""
    rule = node.rule
    if rule is None:  # an object or a list no row describes: only its fields matter
        if node.item is not None:
            count = draw(st.integers(options.min_items, 3))
            return [_object(draw, node.item, options) for _ in range(count)]
        return _object(draw, node, options)
    kind, type_ = rule.type.kind, rule.type
    items = {"min_size": options.min_items, "max_size": 3}
    if kind is Kind.MAPPING:
        if node.children:
            return _object(draw, node, options)
        if type_.keys:
            return draw(_keyed_objects(type_.keys))
        return draw(JSON_OBJECTS)
    if kind is Kind.LIST_OF_MAPPINGS:
        if node.item is not None:
            count = draw(st.integers(options.min_items, 3))
            return [_object(draw, node.item, options) for _ in range(count)]
        if type_.keys:
            return draw(st.lists(_keyed_objects(type_.keys), **items))
        return draw(st.lists(JSON_OBJECTS, **items))
    assert not node.children, f"{rule.paths} has fields but is a {kind}"
    if kind is Kind.STRING:
        if type_.existing:
            return draw(st.sampled_from(TASK_ALIASES))
        if type_.enum:
            return draw(st.sampled_from(type_.enum))
        return draw(NON_EMPTY_TEXT if type_.non_empty else TEXT)
    if kind is Kind.NUMBER:
        return draw(_bounded_number(rule))
    if kind is Kind.INTEGER:
        return draw(st.integers(-1000, 10**6))
    if kind is Kind.BOOLEAN:
        return draw(st.booleans())
    if kind is Kind.LIST:
        return draw(st.lists(JSON, **items))
    if kind is Kind.LIST_OF_STRINGS:
        return draw(st.lists(TEXT, **items))
    if kind is Kind.LIST_OF_MAPPINGS_OR_STRINGS:
        return draw(st.lists(JSON_OBJECTS | TEXT, **items))
    if kind is Kind.NUMBER_OR_STRING:
        return draw(FINITE | st.integers() | TEXT)
    if kind is Kind.NUMERIC_ID:
        return draw(st.sampled_from(NUMERIC_IDS) if type_.existing else st.integers(0, 10**9))
    if kind is Kind.ID:
        return draw(st.sampled_from(ALIASES_OR_IDS))
    if kind is Kind.PATH:
        return draw(NON_EMPTY_TEXT | st.lists(TEXT | st.integers(0, 9), max_size=3))
    if kind in (Kind.SERIALIZABLE, Kind.ANY):
        return draw(JSON_NOT_NULL if rule.requirement is Requirement.NO else JSON)
    raise AssertionError(f"no strategy for {kind}")


def _object(draw: Callable, node: Node, options: Options) -> dict:
    """An object with the node's fields: required ones, one member at least of each choice,
    conditional ones when their trigger asks for them, optional ones when the draw says so."""
    triggers = {
        child.rule.condition.field: child.rule.condition.values
        for child in node.children.values()
        if child.rule is not None and child.rule.condition is not None
    }
    present: set[str] = set()
    choices: dict[tuple[str, Any], list[str]] = {}
    conditional: list[str] = []
    for name, child in node.children.items():
        rule = child.rule
        if key := _choice_key(rule):
            choices.setdefault(key, []).append(name)
        elif rule is not None and rule.requirement is Requirement.CONDITIONAL:
            conditional.append(name)
        elif _needed(rule) or (rule is None and _has_needed_child(child)) or draw(options.optional):
            present.add(name)
    for members in choices.values():
        present.update(draw(st.lists(st.sampled_from(members), min_size=1, max_size=len(members), unique=True)))
    out: dict[str, Any] = {}
    for name, child in node.children.items():
        if name in present:
            if name in triggers:  # a value that sometimes asks for the conditional fields
                values = [*sorted({v for vs in triggers.values() for v in vs}), "retire"]
                out[name] = draw(st.sampled_from(values))
            else:
                out[name] = _value(draw, child, options)
    for name in conditional:
        condition = node.children[name].rule.condition
        if out.get(condition.field) in condition.values or draw(options.optional):
            out[name] = _value(draw, node.children[name], options)
    return out


@st.composite
def outputs(draw: Callable, name: str, optional: st.SearchStrategy[bool] | None = None, min_items: int = 0) -> Any:
    options = Options(st.booleans() if optional is None else optional, min_items)
    shape = SHAPES[name]
    if shape.whole_output is not None:
        return draw(JSON_OBJECTS)
    out = _object(draw, shape.root, options)
    if shape.open_root and draw(options.optional):
        for key in draw(st.lists(st.sampled_from(["insights", "meta", "trace"]), max_size=3, unique=True)):
            if key not in shape.root.children:
                out[key] = draw(JSON)
    return out


# --- Mutations -------------------------------------------------------------------------------------

Loc = tuple[str | int, ...]


def path_of(loc: Loc) -> str:
    text = ""
    for part in loc:
        text = f"{text}[{part}]" if isinstance(part, int) else (f"{text}.{part}" if text else part)
    return text


@dataclass(frozen=True)
class Mutation:
    """One change to a compliant output, and the single finding it must cause."""

    what: str
    loc: Loc
    value: Any = None
    drop: bool = False
    violation: tuple[str, str] | None = None
    warning: tuple[str, str] | None = None
    hint: bool = False

    def apply(self, output: Any) -> Any:
        if not self.loc:
            return self.value
        changed = copy.deepcopy(output)
        target = changed
        for part in self.loc[:-1]:
            target = target[part]
        if self.drop:
            del target[self.loc[-1]]
        else:
            target[self.loc[-1]] = self.value
        return changed


def _set(what: str, loc: Loc, value: Any, code: str, at: Loc | None = None, *, hint: bool = False) -> Mutation:
    return Mutation(what, loc, value, violation=(path_of(loc if at is None else at), code), hint=hint)


def _warn(what: str, loc: Loc, value: Any, code: str, at: Loc | None = None) -> Mutation:
    return Mutation(what, loc, value, warning=(path_of(loc if at is None else at), code))


WRONG_VALUES: dict[Kind, list[tuple[Any, bool]]] = {  # (value, the violation carries a hint)
    Kind.STRING: [(7, False), (["text"], False)],
    Kind.NUMBER: [("0.5", False), (True, False)],
    Kind.INTEGER: [(1.5, False), ("3", False)],
    Kind.BOOLEAN: [("true", False), (1, False)],
    Kind.LIST: [("item", False), ({"a": 1}, False)],
    Kind.LIST_OF_STRINGS: [("item", False), ('["a", "b"]', True)],
    Kind.LIST_OF_MAPPINGS: [({"a": 1}, False), ('[{"a": 1}]', True)],
    Kind.LIST_OF_MAPPINGS_OR_STRINGS: [(3, False), ("item", False)],
    Kind.MAPPING: [([], False), ('{"a": 1}', True)],
    Kind.NUMBER_OR_STRING: [([], False), ({"a": 1}, False)],
    Kind.NUMERIC_ID: [("1", True), (1.5, False)],
    Kind.ID: [(1.5, False), (["m0"], False)],
    Kind.PATH: [(3, False), ({"a": 1}, False)],
}
WRONG_ITEMS: dict[Kind, list[tuple[Any, bool]]] = {
    Kind.LIST_OF_STRINGS: [(5, False), ({"a": 1}, False)],
    Kind.LIST_OF_MAPPINGS: [("item", False), ('{"a": 1}', True)],
    Kind.LIST_OF_MAPPINGS_OR_STRINGS: [(5, False), ([], False)],
}


def _value_mutations(rule: FieldRule, loc: Loc, value: Any) -> list[Mutation]:
    """Changes of a present value: another type, out of its bounds or enum, empty, an unknown id,
    non-JSON content, a broken list item, an undocumented key, null."""
    type_, kind = rule.type, rule.type.kind
    found: list[Mutation] = []
    for wrong, hint in WRONG_VALUES.get(kind, []):
        found.append(_set(f"{kind} given {wrong!r}", loc, wrong, "wrong_type", hint=hint))
    if kind in (Kind.NUMBER, Kind.INTEGER, Kind.NUMBER_OR_STRING):
        found.append(_set("NaN", loc, math.nan, "not_serializable"))
        found.append(_set("infinity", loc, -math.inf, "not_serializable"))
    if kind is Kind.NUMBER and type_.maximum is not None:
        found.append(_set("above the maximum", loc, type_.maximum + 0.5, "out_of_range"))
    if kind is Kind.NUMBER and type_.minimum is not None:
        found.append(_set("below the minimum", loc, type_.minimum - 0.5, "out_of_range"))
    if kind is Kind.STRING and type_.enum:
        if type_.enum_open:
            found.append(_warn("a value outside the open list", loc, "zz_not_listed", "not_in_enum"))
        else:
            found.append(_set("a value outside the enum", loc, "zz_not_listed", "not_in_enum"))
    if (kind is Kind.STRING and type_.non_empty) or kind in (Kind.ID, Kind.PATH):
        found.append(_set("an empty string", loc, "", "empty_string"))
        found.append(_set("a blank string", loc, "  ", "empty_string"))
    if type_.existing:
        unknown = 999_999 if kind is Kind.NUMERIC_ID else "zz_unknown"
        found.append(_set("an id the input did not offer", loc, unknown, "unknown_id"))
    if kind is Kind.MAPPING and type_.serializable:
        found.append(_set("NaN inside", loc, {"k": math.nan}, "not_serializable", (*loc, "k")))
        found.append(_set("an object inside", loc, {"k": [object()]}, "not_serializable", (*loc, "k", 0)))
    if kind is Kind.SERIALIZABLE:
        found.append(_set("a Python object", loc, object(), "not_serializable"))
        found.append(_set("NaN in a list", loc, [1, math.nan], "not_serializable", (*loc, 1)))
    if kind is Kind.MAPPING and type_.keys and isinstance(value, dict):
        found.append(_warn("an undocumented key", (*loc, EXTRA), 1, "unknown_field"))
    if isinstance(value, list):
        for index, item in enumerate(value[:3]):
            for wrong, hint in WRONG_ITEMS.get(kind, []):
                found.append(_set(f"item {index} given {wrong!r}", (*loc, index), wrong, "wrong_type", hint=hint))
            if kind is Kind.LIST_OF_MAPPINGS and type_.keys and isinstance(item, dict):
                found.append(_warn("an undocumented item key", (*loc, index, EXTRA), 1, "unknown_field"))
    if rule.requirement is Requirement.NO:
        found.append(_warn("null for an optional field", loc, None, "null_value"))
    return found


def _object_mutations(node: Node, obj: dict, loc: Loc, shape: Shape, *, open_level: bool) -> list[Mutation]:
    """Changes of an object of the output: an extra field, and the changes of each of its fields."""
    found: list[Mutation] = []
    if open_level:
        found.append(_set("a non-JSON other field", (*loc, EXTRA), math.nan, "not_serializable"))
    else:
        found.append(_warn("an undeclared field", (*loc, EXTRA), 1, "unknown_field"))
    for name, child in node.children.items():
        rule = child.rule
        child_loc = (*loc, name)
        if name not in obj:
            if rule is not None and rule.condition is not None and rule.condition.field in node.children:
                for trigger in rule.condition.values:
                    what = f"{rule.condition.field} set to {trigger} without {name}"
                    found.append(_set(what, (*loc, rule.condition.field), trigger, "conditional_missing", child_loc))
            continue
        value = obj[name]
        if rule is None:
            expected = "a list" if child.item is not None else "an object"
            found.append(_set(f"a string instead of {expected}", child_loc, "text", "wrong_type"))
        else:
            found.extend(_value_mutations(rule, child_loc, value))
            found.extend(_drop_mutations(obj, name, rule, loc, shape))
        found.extend(_walk(child, value, child_loc, shape))
    return found


def _drop_mutations(obj: dict, name: str, rule: FieldRule, loc: Loc, shape: Shape) -> list[Mutation]:
    """Dropping the field, when that must be reported: what is reported, and where."""
    where = (*loc, name)
    if rule.group:
        members = shape.groups[rule.group]
        if [m for m in members if m in obj] == [name]:
            return [
                Mutation(
                    "drop the only member of a group",
                    where,
                    drop=True,
                    violation=(path_of((*loc, members[0])), "alternative_missing"),
                )
            ]
        return []
    if rule.alternatives:
        members = [split_path(p)[-1] for p in rule.paths]
        if [m for m in members if m in obj] == [name]:
            return [
                Mutation(
                    "drop the only alternative",
                    where,
                    drop=True,
                    violation=(path_of((*loc, members[0])), "alternative_missing"),
                )
            ]
        return []
    if rule.requirement is Requirement.YES:
        return [Mutation("drop a required field", where, drop=True, violation=(path_of(where), "missing_required"))]
    if rule.requirement is Requirement.IMPLICIT:
        return [Mutation("drop an implicit field", where, drop=True, warning=(path_of(where), "missing_required"))]
    if rule.requirement is Requirement.CONDITIONAL and obj.get(rule.condition.field) in rule.condition.values:
        return [
            Mutation("drop a conditional field", where, drop=True, violation=(path_of(where), "conditional_missing"))
        ]
    return []


def _walk(node: Node, value: Any, loc: Loc, shape: Shape) -> list[Mutation]:
    """Mutations inside a present value: its fields, or those of each of its items."""
    found: list[Mutation] = []
    if node.children and isinstance(value, dict):
        found.extend(_object_mutations(node, value, loc, shape, open_level=False))
    if node.item is not None and isinstance(value, list):
        for index, item in enumerate(value[:3]):
            if isinstance(item, dict):
                found.extend(_object_mutations(node.item, item, (*loc, index), shape, open_level=False))
    return found


def mutations(name: str, output: Any) -> list[Mutation]:
    """Every single change of a compliant output of the contract that the validator must report."""
    shape = SHAPES[name]
    found = [_set("a list instead of an object", (), [output], "wrong_type"), _set("text", (), "{", "wrong_type")]
    if shape.whole_output is not None:
        found.append(_set("NaN in the output", (EXTRA,), math.nan, "not_serializable"))
        found.append(_set("an object in the output", (EXTRA,), {"at": object()}, "not_serializable", (EXTRA, "at")))
        return found
    found.append(_set("the output as JSON text", (), '{"a": 1}', "wrong_type", hint=True))
    found.extend(_object_mutations(shape.root, output, (), shape, open_level=shape.open_root))
    return found


# --- Helpers -----------------------------------------------------------------------------------------


def findings(report: Report) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    return [(v.path, str(v.code)) for v in report.violations], [(w.path, str(w.code)) for w in report.warnings]


def assert_compliant(name: str, output: Any) -> None:
    violations, warnings = findings(VALIDATORS[name](output, KNOWN_IDS))
    assert violations == [], output
    assert warnings == [], output


def assert_single_finding(name: str, output: Any, mutation: Mutation) -> None:
    report = VALIDATORS[name](mutation.apply(output), KNOWN_IDS)
    violations, warnings = findings(report)
    assert violations == ([mutation.violation] if mutation.violation else []), mutation
    assert warnings == ([mutation.warning] if mutation.warning else []), mutation
    if mutation.violation:
        assert bool(report.violations[0].hint) is mutation.hint, mutation


@functools.cache
def full_output(name: str) -> Any:
    """An output with every field of the contract and at least one item in every list: one
    generated example, the same on every run."""
    examples: list[Any] = []

    @settings(database=None, max_examples=1, phases=[Phase.generate], derandomize=True, deadline=None)
    @given(outputs(name, optional=st.just(True), min_items=1))
    def capture(output: Any) -> None:
        examples.append(output)

    capture()
    return examples[0]


# --- Properties ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_generated_outputs_comply_with_their_contract(name, data):
    assert_compliant(name, data.draw(outputs(name)))


@pytest.mark.parametrize("name", NAMES)
@settings(PROPERTY_SETTINGS, max_examples=10)
@given(data=st.data())
def test_outputs_with_every_optional_field_comply(name, data):
    output = data.draw(outputs(name, optional=st.just(True), min_items=1))
    assert_compliant(name, output)
    for key, child in SHAPES[name].root.children.items():
        if _choice_key(child.rule) is None and (child.rule is None or child.rule.condition is None):
            assert key in output, key


@pytest.mark.parametrize("name", NAMES)
@settings(PROPERTY_SETTINGS, max_examples=10)
@given(data=st.data())
def test_outputs_with_only_required_fields_comply(name, data):
    output = data.draw(outputs(name, optional=st.just(False)))
    assert_compliant(name, output)
    shape = SHAPES[name]
    if shape.whole_output is not None:  # `_toute réponse_`: any JSON object, no field of its own
        return
    for key in output:
        rule = shape.root.children[key].rule
        assert rule is None or rule.requirement is not Requirement.NO, key


@pytest.mark.parametrize("name", NAMES)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_one_mutation_of_a_compliant_output_yields_exactly_its_finding(name, data):
    output = data.draw(outputs(name))
    mutation = data.draw(st.sampled_from(mutations(name, output)))
    assert_single_finding(name, output, mutation)


@pytest.mark.parametrize("name", NAMES)
def test_every_mutation_of_a_full_output_yields_exactly_its_finding(name):
    output = full_output(name)
    assert_compliant(name, output)
    for mutation in mutations(name, output):
        assert_single_finding(name, output, mutation)


def test_the_mutations_cover_every_code_across_the_seed():
    violations: set[str] = set()
    warnings: set[str] = set()
    for name in NAMES:
        for mutation in mutations(name, full_output(name)):
            if mutation.violation:
                violations.add(mutation.violation[1])
            if mutation.warning:
                warnings.add(mutation.warning[1])
    assert violations == {
        "missing_required",
        "wrong_type",
        "out_of_range",
        "not_in_enum",
        "empty_string",
        "not_serializable",
        "unknown_id",
        "alternative_missing",
        "conditional_missing",
    }
    assert warnings == {"unknown_field", "null_value", "not_in_enum", "missing_required"}


def test_a_mutated_path_names_list_items_by_index():
    output = full_output("auto_evolution")
    paths = {m.violation[0] for m in mutations("auto_evolution", output) if m.violation}
    assert "signals[0].metric" in paths
    assert "signals[0].direction" in paths
    assert "intention.action_type" in paths
