"""Safe evaluation of the small JavaScript-style conditions written in agent manifests.

Manifests are written by people, not by the platform, so a condition must never reach Python's
`eval`: the text is tokenized and parsed into a small tree here, and only that tree is walked,
reading the context through dict keys and list indexes, never through Python attributes.

Semantics follow JavaScript where authors would notice, with a few deliberate departures:

- `&&` and `||` short-circuit and return the deciding operand, as in JS (`0 || "x"` is `"x"`).
- `==` and `===` mean the same strict comparison; booleans never equal numbers (`true != 1`).
- `and`, `or`, `not` are exact synonyms of `&&`, `||`, `!`, so `not` binds as tightly as `!`:
  `not a == b` means `(!a) == b`, unlike Python.
- No implicit conversions: comparing or adding values of different types is an error rather
  than a silent JS coercion, so a broken manifest fails loudly instead of passing.
- A missing key of an object reads as null (JS `undefined`), but an unknown root name and any
  property read on null are errors that name the path.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple, Protocol

MAX_LENGTH = 1000
MAX_DEPTH = 50

_TOKEN = re.compile(
    r"""(?P<space>\s+)
    |(?P<number>(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)
    |(?P<name>[A-Za-z_$][A-Za-z0-9_$]*)
    |(?P<quote>["'])
    |(?P<op>===|!==|==|!=|<=|>=|&&|\|\||\+\+|--|\*\*|[<>+\-*/%!().\[\]])""",
    re.VERBOSE | re.ASCII,
)
_NAME_CHARACTER = re.compile(r"[A-Za-z0-9_$]")
_HINTS = {
    "=": "did you mean == ?",
    "&": "did you mean && ?",
    "|": "did you mean || ?",
    ";": "a condition is a single expression, without ';'",
    "`": "template strings are not supported, use quotes",
}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}
# Checked in order, since a Python bool is also an int.
_KINDS = (
    (bool, "a boolean"),
    (int | float, "a number"),
    (str, "a string"),
    (list | tuple, "an array"),
    (Mapping, "an object"),
)
_CONSTANTS: dict[str, Any] = {"true": True, "false": False, "null": None, "undefined": None}
_WORDS = {"and": "&&", "or": "||", "not": "!"}
_SAME_AS = {"===": "==", "!==": "!="}
# Binary operators from the loosest to the tightest binding, as in JavaScript.
_LEVELS = tuple(map(frozenset, (["||"], ["&&"], ["==", "!="], ["<", "<=", ">", ">="], ["+", "-"], ["*", "/", "%"])))
_RELATIONAL: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _remainder(left: float, right: float) -> float:
    """JS `%` keeps the sign of the dividend (`-7 % 3` is -1), unlike Python's modulo."""
    result = abs(left) % abs(right)
    return -result if left < 0 else result


_ARITHMETIC: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "%": _remainder,
}


class ConditionError(Exception):
    """Anything wrong with a condition; `reason` is the message without the expression around it."""

    def __init__(self, expression: str, reason: str, where: str = "in") -> None:
        self.expression = expression
        self.reason = reason
        excerpt = expression if len(expression) <= 80 else expression[:77] + "..."
        super().__init__(f"{where} {excerpt!r}: {reason}")


class ConditionSyntaxError(ConditionError):
    """The text is not a condition; `position` is the 0-based index where reading stopped."""

    def __init__(self, expression: str, position: int, reason: str) -> None:
        self.position = position
        super().__init__(expression, reason, where=f"at column {position + 1} of")


class ConditionEvaluationError(ConditionError):
    """The condition is well formed but the context does not fit it (missing name, wrong type)."""


class _Fault(Exception):
    """Raised while walking the tree, which does not know the source; `Condition` adds it."""


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _kind(value: Any) -> str:
    """Names types as a manifest author knows them (JSON's vocabulary, not Python's)."""
    if value is None:
        return "null"
    return next((name for types, name in _KINDS if isinstance(value, types)), f"a {type(value).__name__}")


def _truthy(value: Any) -> bool:
    """JS truthiness: empty arrays and objects are true, NaN is false."""
    if value is None or isinstance(value, bool):
        return bool(value)
    if _is_number(value):
        return value != 0 and not (isinstance(value, float) and math.isnan(value))
    if isinstance(value, str):
        return value != ""
    return True


def _equal(left: Any, right: Any) -> bool:
    """Python equality, except that a boolean is never equal to a number, even inside arrays."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        return len(left) == len(right) and all(map(_equal, left, right))
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        return left.keys() == right.keys() and all(_equal(left[key], right[key]) for key in left)
    same: bool = left == right  # JSON values (the only ones compared here) compare to a bool
    return same


class _Node(Protocol):
    @property
    def text(self) -> str: ...

    def evaluate(self, context: Mapping[str, Any]) -> Any: ...


@dataclass(frozen=True)
class _Literal:
    text: str
    value: Any

    def evaluate(self, context: Mapping[str, Any]) -> Any:
        return self.value


@dataclass(frozen=True)
class _Name:
    text: str

    def evaluate(self, context: Mapping[str, Any]) -> Any:
        if self.text not in context:
            raise _Fault(f"unknown name {self.text!r}")
        return context[self.text]


def _key(value: Any, text: str) -> str | int:
    """Index keys are strings or whole numbers (`a[1.0]` is `a[1]` as in JS); anything else is a mistake."""
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise _Fault(f"index {text!r} must be a string or a whole number, not {_kind(value)}")


def _read(owner: Any, key: str | int, path: str) -> Any:
    """One `.key` or `[key]` step; `path` is the source text of `owner`, for messages."""
    if owner is None:
        raise _Fault(f"cannot read {key!r} of {path!r} because it is null")
    if isinstance(owner, Mapping):
        if key in owner:
            return owner[key]
        return len(owner) if key == "length" else owner.get(str(key))
    if isinstance(owner, str | list | tuple):
        if key == "length":
            return len(owner)
        return owner[key] if isinstance(key, int) and 0 <= key < len(owner) else None
    missing = "length" if key == "length" else f"property {key!r}"
    raise _Fault(f"{path!r} has no {missing}: it is {_kind(owner)}")


@dataclass(frozen=True)
class _Path:
    """A head then `.name`/`[index]` steps, walked in a loop so that long paths need no recursion.

    Each step is the source text of what it reads from (for messages) and the node giving the key.
    """

    text: str
    head: _Node
    steps: tuple[tuple[str, _Node], ...]

    def evaluate(self, context: Mapping[str, Any]) -> Any:
        value = self.head.evaluate(context)
        for owner, key in self.steps:
            value = _read(value, _key(key.evaluate(context), key.text), owner)
        return value


@dataclass(frozen=True)
class _Unary:
    text: str
    op: str
    operand: _Node

    def evaluate(self, context: Mapping[str, Any]) -> Any:
        value = self.operand.evaluate(context)
        if self.op == "!":
            return not _truthy(value)
        if not _is_number(value):
            raise _Fault(f"cannot apply unary {self.op!r} to {self.operand.text!r} ({_kind(value)})")
        return -value if self.op == "-" else value


@dataclass(frozen=True)
class _Operation:
    """One `op right` link of a chain; `left` is the source text of everything before it."""

    op: str
    left: str
    right: _Node

    def apply(self, left: Any, context: Mapping[str, Any]) -> Any:
        if self.op == "&&":
            return self.right.evaluate(context) if _truthy(left) else left
        if self.op == "||":
            return left if _truthy(left) else self.right.evaluate(context)
        right = self.right.evaluate(context)
        if self.op in ("==", "!="):
            return _equal(left, right) == (self.op == "==")
        if self.op in _RELATIONAL:
            return self._compare(left, right)
        return self._arithmetic(left, right)

    def _compare(self, left: Any, right: Any) -> bool:
        if (_is_number(left) and _is_number(right)) or (isinstance(left, str) and isinstance(right, str)):
            return _RELATIONAL[self.op](left, right)
        raise self._mismatch(left, right)

    def _arithmetic(self, left: Any, right: Any) -> Any:
        if self.op == "+" and isinstance(left, str) and isinstance(right, str):
            return left + right
        if not (_is_number(left) and _is_number(right)):
            raise self._mismatch(left, right)
        if self.op in ("/", "%") and right == 0:
            raise _Fault(f"division by zero: {self.right.text!r} is 0")
        try:
            return _ARITHMETIC[self.op](left, right)
        except OverflowError:
            raise _Fault(f"number too large in {self.left!r} {self.op} {self.right.text!r}") from None

    def _mismatch(self, left: Any, right: Any) -> _Fault:
        return _Fault(
            f"cannot apply {self.op!r} to {self.left!r} ({_kind(left)}) and {self.right.text!r} ({_kind(right)})"
        )


@dataclass(frozen=True)
class _Chain:
    """Left-associative operators of one precedence level, folded in a loop rather than a deep tree."""

    text: str
    first: _Node
    rest: tuple[_Operation, ...]

    def evaluate(self, context: Mapping[str, Any]) -> Any:
        value = self.first.evaluate(context)
        for operation in self.rest:
            value = operation.apply(value, context)
        return value


class _Token(NamedTuple):
    kind: str
    text: str
    value: Any
    start: int
    end: int


def _tokenize(source: str) -> list[_Token]:
    tokens: list[_Token] = []
    position = 0
    while position < len(source):
        match = _TOKEN.match(source, position)
        if match is None:
            raise _unexpected(source, position)
        kind = str(match.lastgroup)
        if kind == "space":
            position = match.end()
            continue
        if kind == "quote":
            token = _string(source, position)
        elif kind == "number":
            token = _number(source, match)
        else:
            token = _Token(kind, match.group(), None, position, match.end())
        tokens.append(token)
        position = token.end
    tokens.append(_Token("end", "", None, len(source), len(source)))
    return tokens


def _unexpected(source: str, position: int) -> ConditionSyntaxError:
    char = source[position]
    hint = _HINTS.get(char, "")
    if source.startswith("=>", position):
        hint = "arrow functions are not supported"
    return ConditionSyntaxError(source, position, f"unexpected {char!r}" + (f", {hint}" if hint else ""))


def _number(source: str, match: re.Match[str]) -> _Token:
    text = match.group()
    if _NAME_CHARACTER.match(source, match.end()):
        raise ConditionSyntaxError(source, match.end(), f"unexpected {source[match.end()]!r} right after a number")
    value = int(text) if text.isdigit() else float(text)
    return _Token("number", text, value, match.start(), match.end())


def _string(source: str, start: int) -> _Token:
    quote = source[start]
    chars: list[str] = []
    position = start + 1
    while position < len(source) and source[position] != quote:
        if source[position] == "\\":
            char, position = _escape(source, position + 1)
        else:
            char, position = source[position], position + 1
        chars.append(char)
    if position >= len(source):
        raise ConditionSyntaxError(source, start, f"unterminated string, the closing {quote} is missing")
    return _Token("string", source[start : position + 1], "".join(chars), start, position + 1)


def _escape(source: str, position: int) -> tuple[str, int]:
    """Decodes the escape after a backslash; unknown escapes stand for the character itself, as in JS."""
    char = source[position : position + 1]
    if char != "u":
        return _ESCAPES.get(char, char), position + 1
    digits = source[position + 1 : position + 5]
    if not re.fullmatch("[0-9a-fA-F]{4}", digits):
        raise ConditionSyntaxError(source, position - 1, "\\u must be followed by 4 hex digits")
    return chr(int(digits, 16)), position + 5


class _Parser:
    """Recursive descent over the tokens, one method per kind of construct, tracking nesting depth."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.tokens = _tokenize(source)
        self.index = 0
        self.depth = 0
        self.names: set[str] = set()

    @property
    def token(self) -> _Token:
        return self.tokens[self.index]

    def advance(self) -> _Token:
        self.index += 1
        return self.tokens[self.index - 1]

    def at(self, *texts: str) -> bool:
        return self.token.kind == "op" and self.token.text in texts

    def since(self, start: int) -> str:
        return self.source[start : self.tokens[self.index - 1].end]

    def fail(self, expected: str) -> ConditionSyntaxError:
        found = "the end of the expression" if self.token.kind == "end" else repr(self.token.text)
        return ConditionSyntaxError(self.source, self.token.start, f"expected {expected}, found {found}")

    def expect(self, text: str) -> None:
        if not self.at(text):
            raise self.fail(repr(text))
        self.advance()

    @contextmanager
    def nested(self, position: int) -> Iterator[None]:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ConditionSyntaxError(self.source, position, f"nested deeper than {MAX_DEPTH} levels")
        yield
        self.depth -= 1

    def condition(self) -> _Node:
        node = self.binary(0)
        if self.token.kind != "end":
            raise self.fail("an operator or the end of the expression")
        return node

    def binary(self, level: int) -> _Node:
        if level == len(_LEVELS):
            return self.unary()
        start = self.token.start
        first = self.binary(level + 1)
        rest: list[_Operation] = []
        while (op := _operator(self.token)) in _LEVELS[level]:
            left = self.since(start)
            self.advance()
            rest.append(_Operation(str(op), left, self.binary(level + 1)))
        return _Chain(self.since(start), first, tuple(rest)) if rest else first

    def unary(self) -> _Node:
        op = _operator(self.token)
        if op not in ("!", "-", "+"):
            return self.postfix()
        start = self.advance().start
        with self.nested(start):
            operand = self.unary()
        return _Unary(self.since(start), str(op), operand)

    def postfix(self) -> _Node:
        start = self.token.start
        head = self.primary()
        steps: list[tuple[str, _Node]] = []
        while self.at(".", "[", "("):
            steps.append((self.since(start), self.step()))
        return _Path(self.since(start), head, tuple(steps)) if steps else head

    def step(self) -> _Node:
        """The key read by one `.name` or `[index]` step; a `(` here would be a call, which is refused."""
        token = self.advance()
        if token.text == "(":
            raise ConditionSyntaxError(self.source, token.start, "function calls are not supported")
        if token.text == ".":
            if self.token.kind != "name":
                raise self.fail("a property name after '.'")
            name = self.advance().text
            return _Literal(repr(name), name)
        with self.nested(token.start):
            key = self.binary(0)
        self.expect("]")
        return key

    def primary(self) -> _Node:
        token = self.token
        if token.kind in ("number", "string"):
            return _Literal(self.advance().text, token.value)
        if token.kind == "name" and token.text not in _WORDS:
            self.advance()
            if token.text in _CONSTANTS:
                return _Literal(token.text, _CONSTANTS[token.text])
            self.names.add(token.text)
            return _Name(token.text)
        if not self.at("("):
            raise self.fail("a value")
        self.advance()
        with self.nested(token.start):
            node = self.binary(0)
        self.expect(")")
        return node


def _operator(token: _Token) -> str | None:
    """The canonical operator a token stands for, so `and`/`===` share the code of `&&`/`==`."""
    if token.kind == "op":
        return _SAME_AS.get(token.text, token.text)
    return _WORDS.get(token.text) if token.kind == "name" else None


def _check_source(source: object) -> str:
    """Rejects what cannot be a condition before tokenizing, e.g. a YAML `true` instead of `"true"`."""
    if not isinstance(source, str):
        raise ConditionSyntaxError(repr(source), 0, f"a condition must be text, not {type(source).__name__}")
    if not source.strip():
        raise ConditionSyntaxError(source, 0, "the condition is empty")
    if len(source) > MAX_LENGTH:
        raise ConditionSyntaxError(source, MAX_LENGTH, f"the condition is longer than {MAX_LENGTH} characters")
    return source


@dataclass(frozen=True)
class Condition:
    """A parsed condition; constructing one parses `source` and raises ConditionSyntaxError if it is invalid."""

    source: str
    _tree: _Node = field(init=False, repr=False, compare=False)
    _names: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        parser = _Parser(_check_source(self.source))
        object.__setattr__(self, "_tree", parser.condition())
        object.__setattr__(self, "_names", frozenset(parser.names))

    def evaluate(self, context: Mapping[str, Any]) -> Any:
        """The raw value, e.g. a number for `urls.length`; `holds` is what gates a job."""
        try:
            return self._tree.evaluate(context)
        except _Fault as fault:
            raise ConditionEvaluationError(self.source, str(fault)) from None

    def holds(self, context: Mapping[str, Any]) -> bool:
        """JS truthiness of the value, so `urls.length` alone reads as "there are urls"."""
        return _truthy(self.evaluate(context))

    @property
    def names(self) -> frozenset[str]:
        """Root names the condition reads, so a manifest can be checked against the context it will get."""
        return self._names


@lru_cache(maxsize=1024)
def parse(expression: str) -> Condition:
    """Parses once per distinct text, since the same manifest conditions run for every job."""
    return Condition(expression)


def holds(expression: str, context: Mapping[str, Any]) -> bool:
    """The one-call form for code that checks a manifest condition once per job."""
    return parse(expression).holds(context)
