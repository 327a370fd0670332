"""The validator that explains itself (seed 000): the compile half of the contract rules.

``plan`` reads a contract's ``FieldRule``s (``governance/contracts/rules.py``) once into what a
validation walks; a validator built from it returns a ``Report``: every violation with its concrete
JSON path (``signals[2].metric``), a code, a plain message and the runtime effect lost; warnings
apart. Two validators are built from a plan:

* the one the service runs is generated Python (``governance/contracts/codegen.py``), fast but
  long to read;
* ``compile_contract`` here is the reference: the same walk as closures over the plan, short
  enough to read as the spec. It is kept only for that: the equivalence tests
  (tests/governance/contracts/test_codegen.py) hold the generated code to its reports, finding for
  finding and in the same order, so a change to what a report says is made here first.

The violations both build on the failing path (``wrong_type``, ``wrong_item``, ...) live here
once. Pure: no Django.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from json.scanner import make_scanner
from typing import Any

from governance.contracts.rules import Code, FieldRule, Kind, Requirement, TypeRule, format_number

# --- Reports --------------------------------------------------------------------------------------


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs twice as much, per violation
class Violation:
    path: str
    code: str
    message: str
    effect: str = ""
    hint: str = ""

    def as_dict(self) -> dict[str, str]:
        """The API's shape; the output itself is at path "$"."""
        out = {"path": self.path or "$", "code": str(self.code), "message": self.message}
        if self.effect:
            out["effect"] = self.effect
        if self.hint:
            out["hint"] = self.hint
        return out


@dataclass(slots=True)
class Report:
    """What one validation found. A report is a value: its findings are tuples (which need no
    default factory, the costliest part of building one), and every compliant output without
    warnings gets the one shared ``COMPLIANT`` report, so the common case builds nothing."""

    violations: tuple[Violation, ...] = ()
    warnings: tuple[Violation, ...] = ()

    @property
    def compliant(self) -> bool:
        return not self.violations


COMPLIANT = Report()


@dataclass(slots=True)
class Findings:
    """The reference validator's findings while it walks an output, turned into a Report at the end."""

    violations: list[Violation] = field(default_factory=list)
    warnings: list[Violation] = field(default_factory=list)

    def report(self) -> Report:
        if not self.violations and not self.warnings:
            return COMPLIANT
        return Report(tuple(self.violations), tuple(self.warnings))


# --- Values ---------------------------------------------------------------------------------------

_JSON_SCALARS = (str, int, float, bool, type(None))


_TYPE_WORDS = {type(None): "null", bool: "boolean", int: "integer", float: "number", str: "string", list: "list"}
_TYPE_WORDS[dict] = "object"


def type_name(value: Any) -> str:
    """A JSON value's type in the words violations use (a parsed value's type is looked up; a
    subclass is placed by isinstance)."""
    exact = _TYPE_WORDS.get(type(value))
    if exact is not None:
        return exact
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def is_number(value: Any) -> bool:
    """A JSON number: an int or a float, not a boolean."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def first_unserializable(value: Any, path: str) -> tuple[str, str] | None:
    """(path, reason) of the first part of ``value`` JSON cannot carry: objects that are not
    dict/list/str/number/bool/null, non-string keys, NaN and infinities."""
    if isinstance(value, float):
        return (path, f"{value} is not a JSON number") if not math.isfinite(value) else None
    if isinstance(value, _JSON_SCALARS):
        return None
    if isinstance(value, list):
        for index, item in enumerate(value):
            if found := first_unserializable(item, f"{path}[{index}]"):
                return found
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return path, f"key {key!r} is not a string"
            if found := first_unserializable(item, join(path, key)):
                return found
        return None
    return path, f"a {type(value).__name__} is not JSON"


def join(parent: str, key: str) -> str:
    return f"{parent}.{key}" if parent else key


# What json.loads runs on a string, without its three layers of Python calls (a wrong value is
# parsed for its hint, on the violating path).
_scan = make_scanner(json.JSONDecoder())  # type: ignore[arg-type]  # typeshed types the C scanner oddly


def decoded(value: Any) -> Any:
    """A string that holds JSON (the common model mistake: a list serialised inside a string), as
    json.loads reads it: one value, then JSON whitespace only."""
    if isinstance(value, str) and value[:1] in "[{":
        try:
            found, end = _scan(value, 0)
        except (ValueError, StopIteration):
            return None
        return None if value[end:].strip(" \t\n\r") else found
    return None


# --- Compiling ------------------------------------------------------------------------------------

Check = Callable[[Any, str, "Context"], None]


@dataclass
class Context:
    """One validation: where violations go, and the ids the input offered (for ``unknown_id``)."""

    report: Findings
    known_ids: frozenset[str] | None = None


def _value_check(rule: TypeRule, effect: str) -> Check:
    """The check of one present value against its type rule, as a closure built once."""
    kind = rule.kind
    expected = rule.describe()

    def fail(ctx: Context, path: str, code: Code, message: str, hint: str = "") -> None:
        ctx.report.violations.append(Violation(path, code, message, effect, hint))

    def wrong(value: Any, path: str, ctx: Context) -> None:
        ctx.report.violations.append(wrong_type(kind, expected, value, path, effect))

    def bounds(value: float, path: str, ctx: Context) -> None:
        if (rule.minimum is not None and value < rule.minimum) or (rule.maximum is not None and value > rule.maximum):
            low = "-inf" if rule.minimum is None else format_number(rule.minimum)
            high = "inf" if rule.maximum is None else format_number(rule.maximum)
            fail(ctx, path, Code.OUT_OF_RANGE, f"{value} is outside [{low}, {high}]")

    def known(value: Any, path: str, ctx: Context) -> None:
        if ctx.known_ids is not None and str(value) not in ctx.known_ids:
            fail(ctx, path, Code.UNKNOWN_ID, f"{value!r} is not one of the ids the input offered")

    if kind is Kind.STRING:
        enum = frozenset(rule.enum)

        def check(value: Any, path: str, ctx: Context) -> None:
            if type(value) is not str:
                return wrong(value, path, ctx)
            if rule.non_empty and not value.strip():
                return fail(ctx, path, Code.EMPTY_STRING, "the string is empty")
            if enum and value not in enum:
                message = f"{value!r} is not one of {', '.join(rule.enum)}"
                if rule.enum_open:
                    ctx.report.warnings.append(Violation(path, Code.NOT_IN_ENUM, message + " (open list)", effect))
                else:
                    fail(ctx, path, Code.NOT_IN_ENUM, message)
            if rule.existing:
                known(value, path, ctx)

        return check
    if kind is Kind.NUMBER:

        def check(value: Any, path: str, ctx: Context) -> None:
            if not is_number(value):
                return wrong(value, path, ctx)
            if value != value or value in (math.inf, -math.inf):
                return fail(ctx, path, Code.NOT_SERIALIZABLE, f"{value} is not a JSON number")
            bounds(value, path, ctx)

        return check
    if kind is Kind.INTEGER:

        def check(value: Any, path: str, ctx: Context) -> None:
            if type(value) is float and not math.isfinite(value):
                return fail(ctx, path, Code.NOT_SERIALIZABLE, f"{value} is not a JSON number")
            if not (type(value) is int or (type(value) is float and value.is_integer())):
                return wrong(value, path, ctx)
            bounds(value, path, ctx)

        return check
    if kind is Kind.NUMERIC_ID:

        def check(value: Any, path: str, ctx: Context) -> None:
            if type(value) is not int:
                return wrong(value, path, ctx)
            if rule.existing:
                known(value, path, ctx)

        return check
    if kind is Kind.ID:

        def check(value: Any, path: str, ctx: Context) -> None:
            if type(value) is str and not value.strip():
                return fail(ctx, path, Code.EMPTY_STRING, "the id is empty")
            if not (type(value) is str or type(value) is int):
                return wrong(value, path, ctx)
            known(value, path, ctx)

        return check
    if kind is Kind.BOOLEAN:

        def check(value: Any, path: str, ctx: Context) -> None:
            if type(value) is not bool:
                wrong(value, path, ctx)

        return check
    if kind is Kind.NUMBER_OR_STRING:

        def check(value: Any, path: str, ctx: Context) -> None:
            if not (type(value) is str or is_number(value)):
                wrong(value, path, ctx)
            elif type(value) is float and not math.isfinite(value):
                fail(ctx, path, Code.NOT_SERIALIZABLE, f"{value} is not a JSON number")

        return check
    if kind is Kind.PATH:

        def check(value: Any, path: str, ctx: Context) -> None:
            if type(value) is str:
                if not value.strip():
                    fail(ctx, path, Code.EMPTY_STRING, "the path is empty")
                return
            if type(value) is not list or not all(type(item) in (str, int) for item in value):
                wrong(value, path, ctx)

        return check
    if kind in (Kind.LIST_OF_STRINGS, Kind.LIST_OF_MAPPINGS, Kind.LIST_OF_MAPPINGS_OR_STRINGS, Kind.LIST):
        allowed = {
            Kind.LIST_OF_STRINGS: (str,),
            Kind.LIST_OF_MAPPINGS: (dict,),
            Kind.LIST_OF_MAPPINGS_OR_STRINGS: (dict, str),
            Kind.LIST: None,
        }[kind]
        item_words = {(str,): "a string", (dict,): "an object", (dict, str): "an object or a string"}

        def check(value: Any, path: str, ctx: Context) -> None:
            if type(value) is not list:
                return wrong(value, path, ctx)
            if allowed is None:
                return
            for index, item in enumerate(value):
                if type(item) not in allowed:
                    violation = wrong_item(item, f"{path}[{index}]", item_words[allowed], dict in allowed, effect)
                    ctx.report.violations.append(violation)

        return check
    if kind is Kind.MAPPING:

        def check(value: Any, path: str, ctx: Context) -> None:
            if type(value) is not dict:
                wrong(value, path, ctx)
            elif rule.serializable and (found := first_unserializable(value, path)):
                fail(ctx, found[0], Code.NOT_SERIALIZABLE, found[1])

        return check
    if kind is Kind.SERIALIZABLE:

        def check(value: Any, path: str, ctx: Context) -> None:
            if found := first_unserializable(value, path):
                fail(ctx, found[0], Code.NOT_SERIALIZABLE, found[1])

        return check

    def anything(value: Any, path: str, ctx: Context) -> None:
        return None

    return anything


# What a container kind's text must parse to for the "serialised inside a string" hint.
PARSED_AS: dict[Kind, type] = {
    Kind.MAPPING: dict,
    Kind.LIST: list,
    Kind.LIST_OF_STRINGS: list,
    Kind.LIST_OF_MAPPINGS: list,
    Kind.LIST_OF_MAPPINGS_OR_STRINGS: list,
}
_WRONG_TYPE = Code.WRONG_TYPE  # an enum member read from its class costs a lookup per violation


# --- Violations both validators build (only on the failing path) ---------------------------------


def wrong_type(kind: Kind, expected: str, value: Any, path: str, effect: str) -> Violation:
    """A value of the wrong type for its rule's kind."""
    return wrong_value(expected, value, path, effect, PARSED_AS.get(kind), kind is Kind.NUMERIC_ID)


def wrong_value(
    expected: str, value: Any, path: str, effect: str, parsed_as: type | None, numeric_id: bool
) -> Violation:
    """A value of the wrong type, with a hint for the two mistakes models make most: a container
    serialised inside a string (``parsed_as``: the container the rule wants), a numeric id written
    as a string."""
    hint = ""
    if parsed_as is not None and isinstance(found := decoded(value), parsed_as):  # only a container's text is parsed
        hint = f"the value is a JSON {type_name(found)} serialised inside a string: send it as JSON, not as text"
    elif numeric_id and isinstance(value, str) and value.strip().isdigit():
        hint = "a numeric id written as a string is not converted by the runtime: send the number"
    return Violation(path, _WRONG_TYPE, f"expected {expected}, got {type_name(value)}", effect, hint)


def wrong_item(item: Any, path: str, words: str, objects: bool, effect: str) -> Violation:
    """A list item of the wrong type (``words``: what the list holds); ``objects`` when the list
    holds objects, so that an object sent as text gets its hint."""
    hint = ""
    if objects and decoded(item).__class__ is dict:
        hint = "an object serialised inside a string: send it as JSON, not as text"
    return Violation(path, _WRONG_TYPE, f"expected {words}, got {type_name(item)}", effect, hint)


def wrong_container(value: Any, path: str, as_list: bool) -> Violation:
    """An object or a list no row describes (`intent` of `intent.label`) of the wrong type."""
    found = decoded(value)
    expected = "list" if as_list else "object"
    hint = ""
    if isinstance(found, list if as_list else dict):
        hint = f"the value is a JSON {type_name(found)} serialised inside a string: send it as JSON, not as text"
    return Violation(path, _WRONG_TYPE, f"expected {expected}, got {type_name(value)}", "", hint)


def not_an_object(output: Any) -> Violation:
    """The output itself is not an object."""
    hint = "the whole output is JSON inside a string: send the object" if isinstance(decoded(output), dict) else ""
    return Violation("", _WRONG_TYPE, f"expected an object, got {type_name(output)}", "", hint)


# --- Planning: what a contract checks, and where ---------------------------------------------------


def split_path(path: str) -> tuple[str, ...]:
    """``rankings[*].adjusted_score`` -> ("rankings", "*", "adjusted_score")."""
    parts: list[str] = []
    for piece in path.split("."):
        stars = 0
        while piece.endswith("[*]"):
            piece, stars = piece[:-3], stars + 1
        parts.append(piece)
        parts.extend("*" * stars)
    return tuple(parts)


@dataclass(frozen=True)
class PlannedField:
    """One checked field (or set of alternatives sharing a parent) of a contract."""

    rule: FieldRule
    parents: tuple[str, ...]  # segments down to the parent
    names: tuple[str, ...]  # the last segment of each path (alternatives share the parent)
    may_lack_parent: bool = False  # a container on the way has no row of its own (see _absent)


@dataclass(frozen=True)
class Plan:
    """A contract's rules read once into what a validation walks, in the order violations are
    reported: shared by the reference validator below and the generated code
    (``governance/contracts/codegen.py``), so both read the rules the same way."""

    fields: tuple[PlannedField, ...]
    whole: tuple[FieldRule, ...]  # "_toute réponse_": rules about the output itself
    others: tuple[FieldRule, ...]  # "autres champs": the type every undeclared top-level field must have
    groups: tuple[tuple[FieldRule, ...], ...]  # alternatives across rows (priority / priority_delta)
    owned: frozenset[tuple[str, ...]]  # the paths a row of their own checks
    # Objects and lists on the way to a field that no row describes (`intent` of `intent.label`):
    # (parent segments, name, must be a list).
    containers: tuple[tuple[tuple[str, ...], str, bool], ...]
    unknown_levels: tuple[tuple[tuple[str, ...], frozenset[str]], ...]  # objects whose other keys are warned about
    top_level: frozenset[str]  # the declared top-level names ("autres champs" are the others)


def _parents_differ(rule: FieldRule) -> bool:
    parents = {split_path(p)[:-1] for p in rule.paths}
    return len(parents) > 1


def plan(rules: Sequence[FieldRule]) -> Plan:
    """Rows whose paths have different parents are split into one planned field per path (they
    are independent optional fields); alternatives always share a parent by construction
    (parse_paths)."""
    planned: list[PlannedField] = []
    declared: dict[tuple[str, ...], set[str]] = {}
    open_levels: set[tuple[str, ...]] = set()
    whole: list[FieldRule] = []
    groups: dict[str, list[FieldRule]] = {}
    others: list[FieldRule] = []
    owned: set[tuple[str, ...]] = set()
    for rule in rules:
        if rule.whole_output:
            whole.append(rule)
            continue
        if rule.other_fields:
            open_levels.add(())
            others.append(rule)
            continue
        if rule.group:
            groups.setdefault(rule.group, []).append(rule)
        pieces: list[tuple[str, ...]] = (
            [(p,) for p in rule.paths] if _parents_differ(rule) and not rule.alternatives else [rule.paths]
        )
        for paths in pieces:
            segments = [split_path(p) for p in paths]
            names = tuple(s[-1] for s in segments)
            part = FieldRule(paths, rule.type, rule.requirement, rule.effect, rule.condition, rule.group)
            planned.append(PlannedField(part, segments[0][:-1], names))
            for s in segments:
                owned.add(s)
                for depth in range(len(s)):
                    if s[depth] != "*":
                        declared.setdefault(tuple(x for x in s[:depth]), set()).add(s[depth])
            if rule.type.keys and rule.type.kind in (Kind.MAPPING, Kind.LIST_OF_MAPPINGS):
                inner = segments[0] + (("*",) if rule.type.kind is Kind.LIST_OF_MAPPINGS else ())
                declared.setdefault(inner, set()).update(rule.type.keys)
    fields = tuple(
        PlannedField(
            f.rule,
            f.parents,
            f.names,
            any(f.parents[: depth + 1] not in owned for depth in range(len(f.parents)) if f.parents[depth] != "*"),
        )
        for f in planned
    )
    containers = {
        s[: depth + 1]: depth + 1 < len(s) and s[depth + 1] == "*"
        for item in fields
        for s in ((*item.parents, name) for name in item.names)
        for depth in range(len(s) - 1)
        if s[depth] != "*" and s[: depth + 1] not in owned
    }
    return Plan(
        fields=fields,
        whole=tuple(whole),
        others=tuple(others),
        groups=tuple(tuple(members) for members in groups.values()),
        owned=frozenset(owned),
        containers=tuple((path[:-1], path[-1], as_list) for path, as_list in containers.items()),
        unknown_levels=tuple(
            (level, frozenset(names)) for level, names in declared.items() if level not in open_levels
        ),
        top_level=frozenset(declared.get((), ())),
    )


# --- The reference validator -----------------------------------------------------------------------


def _instances(root: Any, segments: Sequence[str], prefix: str = "") -> Iterable[tuple[Any, str]]:
    """The concrete parents of a field: walk every segment but the last, fanning out at ``*``.
    A parent that is missing or of the wrong shape yields nothing: its own rule reports it."""
    if not segments:
        yield root, prefix
        return
    head, rest = segments[0], segments[1:]
    if head == "*":
        if type(root) is list:
            for index, item in enumerate(root):
                yield from _instances(item, rest, f"{prefix}[{index}]")
        return
    if type(root) is dict and head in root:
        yield from _instances(root[head], rest, join(prefix, head))


def _absent(
    root: Any, segments: Sequence[str], owned: frozenset[tuple[str, ...]], prefix: str = "", depth: int = 0
) -> Iterable[str]:
    """The concrete parents of a field that are missing because an object lacks a key no row of
    its own covers (``intent`` for ``intent.label``), written down to the field's parent with the
    remaining segments (``patches[0].assessment``)."""
    if depth == len(segments):
        return
    head = segments[depth]
    if head == "*":
        if type(root) is list:
            for index, item in enumerate(root):
                yield from _absent(item, segments, owned, f"{prefix}[{index}]", depth + 1)
        return
    if type(root) is not dict:
        return
    if head in root:
        yield from _absent(root[head], segments, owned, join(prefix, head), depth + 1)
    elif tuple(segments[: depth + 1]) not in owned:
        path = join(prefix, head)
        for rest in segments[depth + 1 :]:
            path = f"{path}[*]" if rest == "*" else join(path, rest)
        yield path


def compile_contract(rules: Sequence[FieldRule]) -> Callable[[Any, frozenset[str] | None], Report]:
    """The reference validator: the contract interpreted by closures over the plan. The service
    runs the code ``governance/contracts/codegen.py`` generates from the same plan, which is
    faster but harder to read; this one stays as the executable spec that the equivalence tests
    (tests/governance/contracts/test_codegen.py) hold the generated code to, report for report."""
    contract = plan(rules)
    compiled = [(item, _value_check(item.rule.type, item.rule.effect)) for item in contract.fields]
    whole_checks = [_value_check(r.type, r.effect) for r in contract.whole]
    others = [_value_check(r.type, r.effect) for r in contract.others]
    owned, top_level = contract.owned, contract.top_level

    def validate(output: Any, known_ids: frozenset[str] | None = None) -> Report:
        found = Findings()
        walk(output, Context(found, known_ids))
        return found.report()

    def walk(output: Any, ctx: Context) -> None:
        report = ctx.report
        walked: dict[tuple[str, ...], list[tuple[Any, str]]] = {(): [(output, "")]}

        def instances(parents: tuple[str, ...]) -> list[tuple[Any, str]]:
            """Each parent path is walked once per output, whatever the number of rows under it."""
            found = walked.get(parents)
            if found is None:
                found = walked[parents] = list(_instances(output, parents))
            return found

        if whole_checks:
            for whole_check in whole_checks:
                whole_check(output, "", ctx)
            if not compiled:
                return
        if type(output) is not dict:
            report.violations.append(not_an_object(output))
            return
        for parents, name, as_list in contract.containers:
            for parent, prefix in instances(parents):
                if type(parent) is dict and name in parent and type(parent[name]) is not (list if as_list else dict):
                    report.violations.append(wrong_container(parent[name], join(prefix, name), as_list))
        for item, check in compiled:
            rule = item.rule
            if item.may_lack_parent and not rule.group and rule.requirement in (Requirement.YES, Requirement.IMPLICIT):
                for prefix in _absent(output, item.parents, owned):
                    _missing(rule, item.names, {}, prefix, report)
            for parent, prefix in instances(item.parents):
                if type(parent) is not dict:
                    continue  # the parent's own rule (a list of objects) reports the wrong item
                present = False
                for name in item.names:
                    if name in parent:
                        value = parent[name]
                        path = join(prefix, name)
                        if value is None and rule.requirement is Requirement.NO:
                            null = Violation(path, Code.NULL_VALUE, "null given: treated as absent", rule.effect)
                            report.warnings.append(null)
                        else:
                            check(value, path, ctx)
                        present = True
                if present or rule.group or rule.requirement is Requirement.NO:
                    continue
                _missing(rule, item.names, parent, prefix, report)
        for members in contract.groups:
            _check_group(members, output, report)
        if others:
            for key, value in output.items():
                if key not in top_level:
                    for other in others:
                        other(value, key, ctx)
        for level, names in contract.unknown_levels:
            for parent, prefix in instances(level):
                if type(parent) is dict:
                    for key in parent:
                        if key not in names:
                            extra = Violation(join(prefix, key), Code.UNKNOWN_FIELD, "not in the contract")
                            report.warnings.append(extra)

    return validate


def _missing(rule: FieldRule, names: tuple[str, ...], parent: dict[str, Any], prefix: str, report: Findings) -> None:
    path = join(prefix, names[0])
    if rule.requirement is Requirement.YES:
        if len(names) > 1:
            choices = " or ".join(join(prefix, n) for n in names)
            message = f"one of {choices} is required"
            report.violations.append(Violation(path, Code.ALTERNATIVE_MISSING, message, rule.effect))
        else:
            report.violations.append(Violation(path, Code.MISSING_REQUIRED, "required field is missing", rule.effect))
    elif rule.requirement is Requirement.CONDITIONAL and rule.condition is not None:
        trigger = parent.get(rule.condition.field)
        if trigger in rule.condition.values:
            report.violations.append(
                Violation(
                    path,
                    Code.CONDITIONAL_MISSING,
                    f"required when {join(prefix, rule.condition.field)} is {trigger!r}",
                    rule.effect,
                )
            )
    elif rule.requirement is Requirement.IMPLICIT:
        message = "implicitly required field is missing"
        report.warnings.append(Violation(path, Code.MISSING_REQUIRED, message, rule.effect))


def _check_group(members: Sequence[FieldRule], output: dict[str, Any], report: Findings) -> None:
    """Alternatives across rows (priority / priority_delta): one of them must be present."""
    names = [p for m in members for p in m.paths]
    segments = split_path(names[0])
    for parent, prefix in _instances(output, segments[:-1]):
        if type(parent) is dict and not any(split_path(n)[-1] in parent for n in names):
            choices = " or ".join(join(prefix, split_path(n)[-1]) for n in names)
            message = f"one of {choices} is required"
            path = join(prefix, segments[-1])
            report.violations.append(Violation(path, Code.ALTERNATIVE_MISSING, message, members[0].effect))
