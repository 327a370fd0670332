"""Contract validators as generated Python (issue 18.3): one function of straight-line code per
contract version, as fastjsonschema does for JSON Schema.

``generate`` reads a contract's ``FieldRule``s through the same plan as the reference validator
(``governance/contracts/validator.py``) and writes the source of ``validate(output, known_ids=None)``:
the output's declared tree is walked once, every field's checks unrolled in place, paths and
messages built only when something fails. ``compile_contract`` compiles that source once and
caches the function per set of rules (so per contract version). The report is the reference
validator's, violation for violation and in the same order: each finding is tagged with the rank
its check has in the reference's order, and a report with more than one finding is sorted by rank
(a stable sort keeps the order inside a rank, which the walk already follows).

Safety: the source is built from the rules only, never from an output. Every name, path, enum
value, message and effect taken from a rule enters the source through ``repr()`` (or as a number
``repr()`` round-trips); the generator's own variable names are numbered, never derived from a
field name. ``manage.py show_validator_source`` prints the source for audit. Pure: no Django.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from operator import itemgetter
from types import SimpleNamespace
from typing import Any

from governance.contracts.rules import Code, FieldRule, Kind, Requirement, TypeRule, format_number
from governance.contracts.validator import (
    COMPLIANT,
    PARSED_AS,
    Plan,
    PlannedField,
    Report,
    Violation,
    first_unserializable,
    is_number,
    not_an_object,
    plan,
    split_path,
    type_name,
    wrong_container,
    wrong_item,
    wrong_value,
)

Validator = Callable[..., Report]

# --- What the generated code calls -----------------------------------------------------------------

_rank, _finding = itemgetter(0), itemgetter(1)


def _is_json(value: Any) -> bool:
    """``first_unserializable(value, path) is None``, without building a path per item: the
    generated code asks this first and builds the path only for a value that fails. Parsed JSON
    is tested by exact type, inline for scalars; anything else as first_unserializable does."""
    kind = type(value)
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str and not isinstance(key, str):
                return False
            kind = type(item)
            if kind is str or kind is int or kind is bool or item is None:
                continue
            if not _is_json(item):
                return False
        return True
    if kind is list:
        for item in value:
            kind = type(item)
            if kind is str or kind is int or kind is bool or item is None:
                continue
            if not _is_json(item):
                return False
        return True
    if kind is str or kind is int or kind is bool or value is None:
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (str, int, bool)):
        return True
    if isinstance(value, list):
        return all(_is_json(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and _is_json(item) for key, item in value.items())
    return False


def _not_serializable(value: Any, path: Any, effect: str) -> Violation:
    found = first_unserializable(value, path)
    assert found is not None  # asked only after _is_json said no
    return Violation(found[0], Code.NOT_SERIALIZABLE, found[1], effect)


def _report(violations: list[tuple[int, Violation]] | None, warnings: list[tuple[int, Violation]] | None) -> Report:
    """The ranked findings in the reference's order (a stable sort: a rank keeps its walk order);
    None where the output had none of that kind."""
    if violations is None:
        return COMPLIANT if warnings is None else Report((), _in_order(warnings))
    return Report(_in_order(violations), _in_order(warnings) if warnings else ())


def _in_order(ranked: list[tuple[int, Violation]]) -> tuple[Violation, ...]:
    if len(ranked) == 1:
        return (ranked[0][1],)
    ranked.sort(key=_rank)
    return tuple(map(_finding, ranked))


# The names the generated module sees: these and the builtins, nothing else.
NAMESPACE: dict[str, Any] = {
    # Code.X as a plain attribute: reading an enum member from its class is a slow lookup in 3.11.
    "Code": SimpleNamespace(**{member.name: member for member in Code}),
    "Violation": Violation,
    "COMPLIANT": COMPLIANT,
    "isfinite": math.isfinite,
    "type_name": type_name,
    "wrong_value": wrong_value,
    "wrong_item": wrong_item,
    "wrong_container": wrong_container,
    "not_an_object": not_an_object,
    "is_json": _is_json,
    "is_number": is_number,
    "not_serializable": _not_serializable,
    "ranked_report": _report,
}

# --- Paths and messages as expressions ---------------------------------------------------------------


@dataclass(frozen=True)
class _Text:
    """A string the generated code builds when it reports: literal pieces (written with repr())
    and expressions of the walk's variables. ``empty`` is known statically: the reference's
    ``join`` leaves out the dot after an empty prefix."""

    parts: tuple[tuple[bool, str], ...] = ()  # (is literal, text or expression)
    alone: str = ""  # an expression that is the whole value, unconverted (a key at the top level)

    @property
    def empty(self) -> bool:
        return not self.alone and all(literal and not text for literal, text in self.parts)

    def __add__(self, other: _Text | str) -> _Text:
        tail = _Text(((True, other),)) if isinstance(other, str) else other
        return _Text(self._pieces() + tail._pieces())

    def _pieces(self) -> tuple[tuple[bool, str], ...]:
        return ((False, f"format({self.alone})"),) if self.alone else self.parts

    def child(self, name: str) -> _Text:
        """``join(prefix, name)``."""
        return _Text(((True, name),)) if self.empty else self + ("." + name)

    def key(self, variable: str) -> _Text:
        """``join(prefix, key)`` for a key only known when validating."""
        if self.empty:
            return _Text(alone=variable)
        return self + "." + _expr(f"format({variable})")

    def index(self, variable: str) -> _Text:
        """``f"{prefix}[{index}]"``."""
        return self + "[" + _expr(f"str({variable})") + "]"

    def code(self) -> str:
        if self.alone:
            return self.alone
        merged: list[tuple[bool, str]] = []
        for literal, text in self.parts:
            if literal and merged and merged[-1][0]:
                merged[-1] = (True, merged[-1][1] + text)
            else:
                merged.append((literal, text))
        if not merged:
            return "''"
        return " + ".join(repr(text) if literal else text for literal, text in merged)


def _literal(text: str) -> _Text:
    return _Text(((True, text),))


def _expr(code: str) -> _Text:
    """A piece the generated code computes (the generator's own expressions, never a rule's words)."""
    return _Text(((False, code),))


def _one_of(prefix: _Text, names: Sequence[str]) -> _Text:
    """The message of missing alternatives: "one of a or b is required", with their paths."""
    message = _literal("one of ")
    for number, name in enumerate(names):
        message = message + (" or " if number else "") + prefix.child(name)
    return message + " is required"


def _frozenset(values: Iterable[str]) -> str:
    """A set of names as Python source, sorted so that the source is the same in every process."""
    return f"frozenset({tuple(sorted(set(values)))!r})"


def _number(value: float) -> str:
    """A bound as Python source: repr() round-trips a finite float; the rest spelled out."""
    if math.isfinite(value):
        return repr(float(value))
    return "float('nan')" if value != value else ("float('inf')" if value > 0 else "-float('inf')")


def _found(rank: int, finding: str, *, warning: bool = False) -> str:
    """The line that records a finding with its rank. V and W start as None, so that a compliant
    output allocates no list: the first finding of each kind makes it."""
    sink = "W" if warning else "V"
    return f"({sink} := {sink} or []).append(({rank}, {finding}))"


# --- The walk's shape ----------------------------------------------------------------------------------


@dataclass
class _Node:
    """One path of the output the walk visits, and what it checks there."""

    children: dict[str, _Node] = field(default_factory=dict)
    star: _Node | None = None
    single: dict[str, list[tuple[int, PlannedField]]] = field(default_factory=dict)  # by name
    multi: list[tuple[int, PlannedField]] = field(default_factory=list)  # alternatives, several names
    containers: dict[str, list[tuple[int, bool]]] = field(default_factory=dict)
    absent: dict[str, list[tuple[int, PlannedField, tuple[str, ...]]]] = field(default_factory=dict)
    groups: list[tuple[int, tuple[FieldRule, ...], tuple[str, ...], str]] = field(default_factory=list)
    unknown: list[tuple[int, frozenset[str]]] = field(default_factory=list)

    def at(self, path: Sequence[str]) -> _Node:
        node = self
        for segment in path:
            if segment == "*":
                node.star = node.star or _Node()
                node = node.star
            else:
                node = node.children.setdefault(segment, _Node())
        return node

    def names(self) -> list[str]:
        """The keys the walk looks up here, in a fixed order."""
        return list(dict.fromkeys([*self.single, *self.containers, *self.absent, *self.children]))


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0
        self.counter = 0

    def __call__(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    @contextmanager
    def block(self, header: str) -> Iterator[None]:
        self(header)
        self.depth += 1
        mark = len(self.lines)
        yield
        if len(self.lines) == mark:
            self("pass")
        self.depth -= 1

    def var(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"


class _Generator:
    def __init__(self, contract: Plan) -> None:
        self.plan = contract
        self.w = _Writer()
        self.constants: list[str] = []
        self.effects: dict[str, str] = {}
        self.root = _Node()
        self.ranks = 0
        self._place()

    # -- placing every check at its node, with its rank in the reference's order --

    def _next(self) -> int:
        self.ranks += 1
        return self.ranks

    def _place(self) -> None:
        contract = self.plan
        self.whole_rank = 0
        self.not_object_rank = self._next()
        for parents, name, as_list in contract.containers:
            self.root.at(parents).containers.setdefault(name, []).append((self._next(), as_list))
        for item in contract.fields:
            rule = item.rule
            absent_rank, present_rank = self._next(), self._next()
            needed = rule.requirement in (Requirement.YES, Requirement.IMPLICIT)
            if item.may_lack_parent and not rule.group and needed:
                for depth, head in enumerate(item.parents):
                    if head != "*" and item.parents[: depth + 1] not in contract.owned:
                        entries = self.root.at(item.parents[:depth]).absent.setdefault(head, [])
                        entries.append((absent_rank, item, item.parents[depth + 1 :]))
            node = self.root.at(item.parents)
            if len(item.names) == 1:
                node.single.setdefault(item.names[0], []).append((present_rank, item))
            else:
                node.multi.append((present_rank, item))
        for members in contract.groups:
            segments = split_path(members[0].paths[0])
            names = tuple(split_path(p)[-1] for m in members for p in m.paths)
            self.root.at(segments[:-1]).groups.append((self._next(), members, names, segments[-1]))
        self.others_rank = self._next()
        for level, declared in contract.unknown_levels:
            self.root.at(level).unknown.append((self._next(), declared))

    # -- small writers --

    def _constant(self, prefix: str, value: str) -> str:
        name = f"{prefix}_{len(self.constants)}"
        self.constants.append(f"{name} = {value}")
        return name

    def _effect(self, text: str) -> str:
        if text not in self.effects:
            self.effects[text] = self._constant("EFFECT", repr(text))
        return self.effects[text]

    def _fail(
        self, rank: int, path: _Text, code: Code, message: _Text | str, effect: str, *, warning: bool = False
    ) -> None:
        self.w(self._failure(rank, path, code, message, effect, warning=warning))

    def _failure(
        self, rank: int, path: _Text, code: Code, message: _Text | str, effect: str, *, warning: bool = False
    ) -> str:
        text = message.code() if isinstance(message, _Text) else repr(message)
        violation = f"Violation({path.code()}, Code.{code.name}, {text}, {self._effect(effect)})"
        return _found(rank, violation, warning=warning)

    # -- one value against its type rule (the reference's _value_check) --

    def _check(
        self,
        rule: TypeRule,
        effect: str,
        value: str,
        path: _Text,
        rank: int,
        items: _Node | None = None,
        null: str = "",
    ) -> None:
        """``items``: the node of the list's objects, when their fields are walked in the loop
        that checks the items' type (a list of objects with rows of its own: ``signals[*].metric``).
        ``null``: the warning of an optional field given null, for the kinds whose first test is
        of the type (``_GATED``): null fails it, so the common case pays no test of its own."""
        w, kind = self.w, rule.kind
        if kind in _HINTED:  # the hint may parse the value: wrong_value says which
            parsed_as = PARSED_AS[kind].__name__ if kind in PARSED_AS else None
            wrong = _found(
                rank,
                f"wrong_value({rule.describe()!r}, {value}, {path.code()}, {self._effect(effect)}, "
                f"{parsed_as}, {kind is Kind.NUMERIC_ID})",
            )
        else:  # wrong_type without a hint, written out
            message = _literal(f"expected {rule.describe()}, got ") + _expr(f"type_name({value})")
            violation = f"Violation({path.code()}, Code.WRONG_TYPE, {message.code()}, {self._effect(effect)})"
            wrong = _found(rank, violation)

        def gate() -> None:
            if null:
                with w.block(f"if {value} is None:"):
                    w(null)
                with w.block("else:"):
                    w(wrong)
            else:
                w(wrong)

        known = f"known_ids is not None and str({value}) not in known_ids"
        unknown_id = _expr(f"repr({value})") + " is not one of the ids the input offered"
        if kind is Kind.STRING:
            with w.block(f"if type({value}) is not str:"):
                gate()
            if rule.non_empty:
                with w.block(f"elif not {value}.strip():"):
                    self._fail(rank, path, Code.EMPTY_STRING, "the string is empty", effect)
            if rule.enum or rule.existing:
                with w.block("else:"):
                    if rule.enum:
                        listed = self._constant("ENUM", _frozenset(rule.enum))
                        message = _expr(f"repr({value})") + f" is not one of {', '.join(rule.enum)}"
                        with w.block(f"if {value} not in {listed}:"):
                            if rule.enum_open:
                                self._fail(rank, path, Code.NOT_IN_ENUM, message + " (open list)", effect, warning=True)
                            else:
                                self._fail(rank, path, Code.NOT_IN_ENUM, message, effect)
                    if rule.existing:
                        with w.block(f"if {known}:"):
                            self._fail(rank, path, Code.UNKNOWN_ID, unknown_id, effect)
        elif kind is Kind.NUMBER:
            with w.block(f"if type({value}) is not float and type({value}) is not int and not is_number({value}):"):
                gate()
            # x - x is NaN for NaN and the infinities, 0 for every other number: one float operation.
            with w.block(f"elif type({value}) is not int and {value} - {value} != 0.0:"):
                self._fail(rank, path, Code.NOT_SERIALIZABLE, self._formatted(value, " is not a JSON number"), effect)
            self._bounds(rule, effect, value, path, rank, "elif")
        elif kind is Kind.INTEGER:
            with w.block(f"if type({value}) is not int and type({value}) is not float:"):
                gate()
            with w.block(f"elif type({value}) is float and not isfinite({value}):"):
                self._fail(rank, path, Code.NOT_SERIALIZABLE, self._formatted(value, " is not a JSON number"), effect)
            with w.block(f"elif type({value}) is float and not {value}.is_integer():"):
                w(wrong)
            self._bounds(rule, effect, value, path, rank, "elif")
        elif kind is Kind.NUMERIC_ID:
            with w.block(f"if type({value}) is not int:"):
                gate()
            if rule.existing:
                with w.block(f"elif {known}:"):
                    self._fail(rank, path, Code.UNKNOWN_ID, unknown_id, effect)
        elif kind is Kind.ID:
            with w.block(f"if type({value}) is not str and type({value}) is not int:"):
                gate()
            with w.block(f"elif type({value}) is str and not {value}.strip():"):
                self._fail(rank, path, Code.EMPTY_STRING, "the id is empty", effect)
            with w.block(f"elif {known}:"):
                self._fail(rank, path, Code.UNKNOWN_ID, unknown_id, effect)
        elif kind is Kind.BOOLEAN:
            with w.block(f"if type({value}) is not bool:"):
                gate()
        elif kind is Kind.NUMBER_OR_STRING:
            with w.block(
                f"if type({value}) is not str and type({value}) is not float and type({value}) is not int "
                f"and not is_number({value}):"
            ):
                gate()
            with w.block(f"elif type({value}) is float and not isfinite({value}):"):
                self._fail(rank, path, Code.NOT_SERIALIZABLE, self._formatted(value, " is not a JSON number"), effect)
        elif kind is Kind.PATH:
            with w.block(f"if type({value}) is str:"), w.block(f"if not {value}.strip():"):
                self._fail(rank, path, Code.EMPTY_STRING, "the path is empty", effect)
            with w.block(
                f"elif type({value}) is not list or not all(type(x) is str or type(x) is int for x in {value}):"
            ):
                w(wrong)
        elif kind in _ITEMS:
            with w.block(f"if type({value}) is not list:"):
                gate()
            allowed = _ITEMS[kind]
            if allowed:
                words, objects = _ITEM_WORDS[kind], "dict" in allowed
                with w.block("else:"):
                    index, item = w.var("i"), w.var("d" if items else "x")
                    at = path.index(index)
                    with w.block(f"for {index}, {item} in enumerate({value}):"):
                        if items is not None:  # the objects' own fields, walked in the same loop
                            with w.block(f"if type({item}) is dict:"):
                                self._object(items, item, at)
                            others = [t for t in allowed if t != "dict"]
                            header = f"elif {' and '.join(f'type({item}) is not {t}' for t in others)}:"
                        else:
                            header = f"if {' and '.join(f'type({item}) is not {t}' for t in allowed)}:"
                        with w.block(header if items is None or others else "else:"):
                            w(
                                _found(
                                    rank,
                                    f"wrong_item({item}, {at.code()}, {words!r}, {objects}, {self._effect(effect)})",
                                )
                            )
        elif kind is Kind.MAPPING:
            with w.block(f"if type({value}) is not dict:"):
                gate()
            if rule.serializable:
                with w.block(f"elif not is_json({value}):"):
                    w(_found(rank, f"not_serializable({value}, {path.code()}, {self._effect(effect)})"))
        elif kind is Kind.SERIALIZABLE:
            with w.block(f"if not is_json({value}):"):
                w(_found(rank, f"not_serializable({value}, {path.code()}, {self._effect(effect)})"))
        # Kind.ANY: nothing to check.

    @staticmethod
    def _formatted(value: str, tail: str) -> _Text:
        return _expr(f"format({value})") + tail

    def _bounds(self, rule: TypeRule, effect: str, value: str, path: _Text, rank: int, keyword: str) -> None:
        tests = []
        if rule.minimum is not None:
            tests.append(f"{value} < {_number(rule.minimum)}")
        if rule.maximum is not None:
            tests.append(f"{value} > {_number(rule.maximum)}")
        if not tests:
            return
        low = "-inf" if rule.minimum is None else format_number(rule.minimum)
        high = "inf" if rule.maximum is None else format_number(rule.maximum)
        with self.w.block(f"{keyword} {' or '.join(tests)}:"):
            self._fail(rank, path, Code.OUT_OF_RANGE, self._formatted(value, f" is outside [{low}, {high}]"), effect)

    # -- a present field, a missing one --

    def _present(self, item: PlannedField, rank: int, value: str, path: _Text, items: _Node | None = None) -> None:
        rule = item.rule
        if rule.requirement is Requirement.NO and rule.type.kind in _GATED:
            null = self._failure(
                rank, path, Code.NULL_VALUE, "null given: treated as absent", rule.effect, warning=True
            )
            self._check(rule.type, rule.effect, value, path, rank, items, null)
        elif rule.requirement is Requirement.NO:
            with self.w.block(f"if {value} is None:"):
                self._fail(rank, path, Code.NULL_VALUE, "null given: treated as absent", rule.effect, warning=True)
            if rule.type.kind is not Kind.ANY:
                with self.w.block("else:"):
                    self._check(rule.type, rule.effect, value, path, rank, items)
        else:
            self._check(rule.type, rule.effect, value, path, rank, items)

    @staticmethod
    def _objects_of(singles: list[tuple[int, PlannedField]], child: _Node | None) -> _Node | None:
        """The node of a list's objects whose fields can be walked in the loop that checks the
        items' type: one row, a list that may hold objects, nothing under it but its items."""
        if len(singles) != 1 or child is None or child.star is None or child.star.star is not None:
            return None
        if child.names() or child.multi or child.groups or child.unknown:
            return None
        return child.star if "dict" in _ITEMS.get(singles[0][1].rule.type.kind, ()) else None

    def _missing(self, item: PlannedField, rank: int, prefix: _Text, parent: str | None) -> None:
        """The reference's ``_missing``; ``parent`` is None where the parent itself is absent."""
        rule, names = item.rule, item.names
        path = prefix.child(names[0])
        if rule.requirement is Requirement.YES:
            if len(names) > 1:
                self._fail(rank, path, Code.ALTERNATIVE_MISSING, _one_of(prefix, names), rule.effect)
            else:
                self._fail(rank, path, Code.MISSING_REQUIRED, "required field is missing", rule.effect)
        elif rule.requirement is Requirement.CONDITIONAL and rule.condition is not None and parent is not None:
            trigger = self.w.var("t")
            self.w(f"{trigger} = {parent}.get({rule.condition.field!r})")
            with self.w.block(f"if {trigger} in {tuple(rule.condition.values)!r}:"):
                message = (
                    _literal("required when ") + prefix.child(rule.condition.field) + " is " + _expr(f"repr({trigger})")
                )
                self._fail(rank, path, Code.CONDITIONAL_MISSING, message, rule.effect)
        elif rule.requirement is Requirement.IMPLICIT:
            self._fail(
                rank, path, Code.MISSING_REQUIRED, "implicitly required field is missing", rule.effect, warning=True
            )

    @staticmethod
    def _reports_missing(item: PlannedField) -> bool:
        rule = item.rule
        if rule.group or rule.requirement is Requirement.NO:
            return False
        return rule.requirement is not Requirement.CONDITIONAL or rule.condition is not None

    # -- the walk --

    def _node(self, node: _Node, value: str, path: _Text, *, known: str = "", after_check: bool = False) -> None:
        """The checks at one path of the output, bound to ``value``; ``known``: "dict" or "list"
        when the value's type is already tested. ``after_check``: the line before tested the type
        for a container's own check, so the walk goes on in its ``else`` when the node is all
        object or all list."""
        w = self.w
        keyed = bool(node.names() or node.multi or node.groups or node.unknown)
        if after_check and keyed != (node.star is not None):
            with w.block("else:"):
                self._node(node, value, path, known="dict" if keyed else "list")
            return
        if keyed and known == "dict":
            self._object(node, value, path)
        elif keyed and not known:
            with w.block(f"if type({value}) is dict:"):
                self._object(node, value, path)
        if node.star is None or known == "dict":
            return
        index, item = w.var("i"), w.var("d")
        if known == "list":
            with w.block(f"for {index}, {item} in enumerate({value}):"):
                self._node(node.star, item, path.index(index))
            return
        with (
            w.block(f"{'elif' if keyed else 'if'} type({value}) is list:"),
            w.block(f"for {index}, {item} in enumerate({value}):"),
        ):
            self._node(node.star, item, path.index(index))

    def _object(self, node: _Node, parent: str, prefix: _Text) -> None:
        w = self.w
        # Where every declared key is looked up anyway, counting the ones found tells whether the
        # object has others (cheaper than comparing its keys with the declared set). A key whose
        # absence has a branch of its own (a required one) is counted as found from the start and
        # uncounted there, so a compliant object pays nothing for it; an optional key is counted
        # where it is found.
        declared = node.unknown[0][1] if len(node.unknown) == 1 else None
        looked_up = {*node.names(), *(name for _, item in node.multi for name in item.names)}
        to_count = set(declared) if declared is not None and declared <= looked_up else set()
        missing = {name: self._missing_here(node, name) for name in node.names()}
        expected = {name for name in to_count & missing.keys() if any(missing[name])}
        to_count -= expected
        counter = w.var("n") if to_count or expected else ""
        if counter:
            w(f"{counter} = {len(expected)}")

        def count(name: str) -> None:
            if name in to_count:
                w(f"{counter} += 1")
                to_count.discard(name)

        for name in node.names():
            path = prefix.child(name)
            singles = node.single.get(name, [])
            child = node.children.get(name)
            counted = name in expected or name in to_count
            present = bool(singles or node.containers.get(name) or child is not None or counted)
            required, absent = missing[name]
            if present:
                with w.block(f"if {name!r} in {parent}:"):
                    count(name)
                    if singles or node.containers.get(name) or child is not None:
                        value = w.var("v")
                        w(f"{value} = {parent}[{name!r}]")
                    objects = self._objects_of(singles, child)
                    for rank, item in singles:
                        self._present(item, rank, value, path, objects)
                    for rank, as_list in node.containers.get(name, []):
                        with w.block(f"if type({value}) is not {'list' if as_list else 'dict'}:"):
                            w(_found(rank, f"wrong_container({value}, {path.code()}, {as_list})"))
                    if child is not None and objects is None:
                        # After a container's own check, the walk below it knows its type.
                        self._node(child, value, path, after_check=bool(node.containers.get(name)))
                if required or absent:
                    with w.block("else:"):
                        if name in expected:
                            w(f"{counter} -= 1")
                        self._absent_here(required, absent, prefix, path, parent)
            elif required or absent:
                with w.block(f"if {name!r} not in {parent}:"):
                    self._absent_here(required, absent, prefix, path, parent)
        for rank, item in node.multi:
            seen = w.var("p") if self._reports_missing(item) else ""
            if seen:
                w(f"{seen} = False")
            for name in item.names:
                with w.block(f"if {name!r} in {parent}:"):
                    count(name)
                    value = w.var("v")
                    w(f"{value} = {parent}[{name!r}]")
                    self._present(item, rank, value, prefix.child(name))
                    if seen:
                        w(f"{seen} = True")
            if seen:
                with w.block(f"if not {seen}:"):
                    self._missing(item, rank, prefix, parent)
        for rank, members, names, first in node.groups:
            test = " and ".join(f"{name!r} not in {parent}" for name in names)
            with w.block(f"if {test}:"):
                message = _one_of(prefix, names)
                self._fail(rank, prefix.child(first), Code.ALTERNATIVE_MISSING, message, members[0].effect)
        for rank, keys in node.unknown:
            listed = self._constant("KNOWN_KEYS", _frozenset(keys))
            key = w.var("k")
            others = f"len({parent}) > {counter}" if counter else f"not {listed}.issuperset({parent})"
            with (
                w.block(f"if {others}:"),
                w.block(f"for {key} in {parent}:"),
                w.block(f"if {key} not in {listed}:"),
            ):
                violation = f"Violation({prefix.key(key).code()}, Code.UNKNOWN_FIELD, 'not in the contract')"
                w(_found(rank, violation, warning=True))

    def _missing_here(
        self, node: _Node, name: str
    ) -> tuple[list[tuple[int, PlannedField]], list[tuple[int, PlannedField, tuple[str, ...]]]]:
        """What the walk reports where ``name`` is absent: its own rows' missing findings, and the
        rows below it (``absent``) whose parent it is."""
        required = [(rank, item) for rank, item in node.single.get(name, []) if self._reports_missing(item)]
        return required, node.absent.get(name, [])

    def _absent_here(
        self,
        missing: list[tuple[int, PlannedField]],
        absent: list[tuple[int, PlannedField, tuple[str, ...]]],
        prefix: _Text,
        path: _Text,
        parent: str,
    ) -> None:
        for rank, item in missing:
            self._missing(item, rank, prefix, parent)
        for rank, item, rest in absent:
            below = path
            for segment in rest:
                below = below + "[*]" if segment == "*" else below.child(segment)
            self._missing(item, rank, below, None)

    def source(self) -> str:
        w, contract = self.w, self.plan
        w.depth = 1
        w("V = W = None  # violations and warnings, each with its rank in the reference's order: lists from the first")
        for rule in contract.whole:
            self._check(rule.type, rule.effect, "output", _Text(), self.whole_rank)
        if contract.whole and not contract.fields:
            w("return ranked_report(V, W)")
        else:
            with w.block("if type(output) is not dict:"):
                w(_found(self.not_object_rank, "not_an_object(output)"))
                w("return ranked_report(V, W)")
            self._node(self.root, "output", _Text(), known="dict")
            if contract.others:
                top = self._constant("DECLARED", _frozenset(contract.top_level))
                key, value = w.var("k"), w.var("v")
                with (
                    w.block(f"if not {top}.issuperset(output):"),
                    w.block(f"for {key}, {value} in output.items():"),
                    w.block(f"if {key} not in {top}:"),
                ):
                    for rule in contract.others:
                        self._check(rule.type, rule.effect, value, _Text(alone=key), self.others_rank)
            with w.block("if V or W:"):
                w("return ranked_report(V, W)")
            w("return COMPLIANT  # the shared report of a compliant output without warnings")
        body = w.lines
        head = [
            "# Generated by governance/contracts/codegen.py from the contract's rules (never from an output).",
            "# Findings are (rank, Violation): ranked_report sorts them into the reference validator's order.",
            *self.constants,
            "",
            "",
            "def validate(output, known_ids=None):",
        ]
        return "\n".join(head + body) + "\n"


# The kinds whose wrong values get a hint (a container sent as text, an id as a string).
_HINTED = frozenset({*PARSED_AS, Kind.NUMERIC_ID})
# The kinds whose check starts with a test of the value's type that null fails.
_GATED = frozenset(Kind) - {Kind.PATH, Kind.SERIALIZABLE, Kind.ANY}
_ITEMS: dict[Kind, tuple[str, ...]] = {
    Kind.LIST: (),
    Kind.LIST_OF_STRINGS: ("str",),
    Kind.LIST_OF_MAPPINGS: ("dict",),
    Kind.LIST_OF_MAPPINGS_OR_STRINGS: ("dict", "str"),
}
_ITEM_WORDS = {
    Kind.LIST_OF_STRINGS: "a string",
    Kind.LIST_OF_MAPPINGS: "an object",
    Kind.LIST_OF_MAPPINGS_OR_STRINGS: "an object or a string",
}


# --- Entry points ---------------------------------------------------------------------------------------


def generate(rules: Sequence[FieldRule]) -> str:
    """The source of the contract's ``validate(output, known_ids=None)``."""
    return _Generator(plan(rules)).source()


def compile_contract(rules: Sequence[FieldRule]) -> Validator:
    """The contract's generated validator, compiled once per set of rules (a contract version's
    rules never change, and two versions with the same rules share one function)."""
    return _compiled(tuple(rules))


@lru_cache(maxsize=1024)
def _compiled(rules: tuple[FieldRule, ...]) -> Validator:
    namespace = dict(NAMESPACE)
    exec(compile(generate(rules), "<contract validator>", "exec"), namespace)
    validate: Validator = namespace["validate"]
    return validate
