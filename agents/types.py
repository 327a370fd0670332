"""The type language of manifest inputs, outputs and `schemas:` (seed 001's Zod). Pure: no Django.

Seed 001 declares every input and output with a Zod expression (`z.array(z.string().url())`) and
R2 says each must be validated. This module reads the subset of Zod a manifest needs with a small
hand-written parser (never `eval`), and checks JSON values against it, each problem with its path.

Grammar (whitespace is free)::

    type      := base ("." modifier)*
    base      := "z" "." ("string" | "number" | "boolean" | "unknown" | "any") "(" ")"
               | "z" "." "array" "(" type ")"
               | "z" "." "record" "(" [ "z.string()" "," ] type ")"
               | "z" "." "object" "(" "{" [ key ":" type ("," key ":" type)* [","] ] "}" ")"
               | "z" "." "enum" "(" "[" string ("," string)* [","] "]" ")"
               | Name                            (a schema of the manifest's `schemas:` section)
    modifier  := "optional()" | "nullable()" | "default(" literal ")" | "describe(" string ")"
               | "min(" n ")" | "max(" n ")" | "length(" n ")" | "nonempty()"
               | "int()" | "url()" | "email()" | "uuid()" | "datetime()"

Semantics follow Zod: an object accepts keys it does not declare (Zod strips them), a field is
required unless `.optional()` (or `.default(...)`), `null` needs `.nullable()`, `.min/.max` bound a
string's or array's length and a number's value. A name resolves to the manifest's own
`schemas:` first, then to the registry of named schemas (agents/named_schemas.py; seed 001's own
example names schemas it never defines), and a manifest naming one that resolves nowhere is refused
at load. Only a version stored before that rule can still reach an undefined name: it is left
unchecked, and the check's result says so (``unchecked``). Parsing is bounded (expression length,
nesting depth, schema count) so that a manifest cannot make the server recurse or loop without end.
"""

from __future__ import annotations

import math
import re
import sys
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

MAX_EXPRESSION_LENGTH = 2000
MAX_DEPTH = 16  # nesting inside one expression
MAX_RESOLVED_DEPTH = 32  # nesting once named schemas are replaced by their definitions
MAX_SCHEMAS = 200
MAX_FIELDS = 200
MAX_VIOLATIONS = 50  # a 10,000-URL payload with every URL wrong answers with the first 50

SCHEMA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TOKEN = re.compile(
    r"""\s*(?:
        (?P<name>[A-Za-z_$][A-Za-z0-9_$]*)
      | (?P<number>-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)
      | (?P<string>'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")
      | (?P<punct>[().,:{}\[\]])
    )""",
    re.VERBOSE,
)
_EMAIL = re.compile(r"^[^\s@]+@[^\s@]+\.[^\s@]+$")

SCALARS = ("string", "number", "boolean", "unknown", "any")
STRING_FORMATS = ("url", "email", "uuid", "datetime")


class TypeSyntaxError(ValueError):
    """A type expression that is not in the language; says where and why."""

    def __init__(self, expression: str, position: int, reason: str) -> None:
        self.expression, self.position, self.reason = expression, position, reason
        super().__init__(f"{reason} (at character {position + 1} of {expression!r})")


class SchemaError(ValueError):
    """A `schemas:` section that cannot be used: a cycle, or types nested too deeply once resolved.
    ``loc`` is the path inside the manifest."""

    def __init__(self, loc: tuple[str | int, ...], message: str) -> None:
        self.loc = loc
        super().__init__(message)


@dataclass(frozen=True)
class Type:
    """One parsed type. ``kind`` is a scalar name, "array", "record", "object", "enum" or "ref"."""

    kind: str
    item: Type | None = None  # array and record elements
    fields: tuple[tuple[str, Type], ...] = ()  # object
    values: tuple[str, ...] = ()  # enum
    name: str = ""  # ref
    minimum: float | None = None
    maximum: float | None = None
    integer: bool = False
    format: str | None = None  # url, email, uuid, datetime
    optional: bool = False
    nullable: bool = False

    @property
    def label(self) -> str:
        """How a message names the expected type."""
        if self.kind == "ref":
            return self.name
        if self.kind == "enum":
            return "one of " + ", ".join(repr(v) for v in self.values)
        if self.format:
            return f"{self.format} string"
        if self.integer:
            return "integer"
        return self.kind


@dataclass(frozen=True)
class Violation:
    """One value that does not match its type; ``loc`` is the path inside the checked value."""

    loc: tuple[str | int, ...]
    msg: str
    type: str

    def as_dict(self, prefix: Iterable[str | int] = ()) -> dict[str, Any]:
        return {"loc": [*prefix, *self.loc], "msg": self.msg, "type": self.type}


# --- Parsing -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Token:
    kind: str  # name, number, string, punct, end
    text: str
    position: int


def _tokenize(source: str) -> list[_Token]:
    tokens, position = [], 0
    while True:
        while position < len(source) and source[position].isspace():
            position += 1
        if position == len(source):
            tokens.append(_Token("end", "", position))
            return tokens
        match = _TOKEN.match(source, position)
        if match is None:
            raise TypeSyntaxError(source, position, f"unexpected character {source[position]!r}")
        kind = match.lastgroup or "punct"
        tokens.append(_Token(kind, match.group(kind), match.start(kind)))
        position = match.end()


def _shown(token: _Token) -> str:
    return repr(token.text) if token.kind != "end" else "the end"


def _unquote(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text[1:-1])


class _Parser:
    """Recursive descent, one method per construct, with the nesting depth tracked."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.tokens = _tokenize(source)
        self.index = 0
        self.depth = 0

    @property
    def token(self) -> _Token:
        return self.tokens[self.index]

    def fail(self, reason: str, token: _Token | None = None) -> TypeSyntaxError:
        return TypeSyntaxError(self.source, (token or self.token).position, reason)

    def advance(self) -> _Token:
        token = self.token
        if token.kind != "end":
            self.index += 1
        return token

    def at(self, text: str) -> bool:
        return self.token.kind == "punct" and self.token.text == text

    def expect(self, text: str) -> None:
        if not self.at(text):
            raise self.fail(f"expected {text!r}, found {_shown(self.token)}")
        self.advance()

    def name(self, what: str) -> _Token:
        if self.token.kind != "name":
            raise self.fail(f"expected {what}, found {_shown(self.token)}")
        return self.advance()

    def whole(self) -> Type:
        parsed = self.type()
        if self.token.kind != "end":
            raise self.fail(f"unexpected {_shown(self.token)} after the type")
        return parsed

    def type(self) -> Type:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(f"types nested deeper than {MAX_DEPTH} levels")
        parsed = self.base()
        while self.at("."):
            self.advance()
            parsed = self.modifier(parsed)
        self.depth -= 1
        return parsed

    def base(self) -> Type:
        start = self.name("a type (z.string(), z.array(...), a schema name, ...)")
        if start.text != "z":
            if not SCHEMA_NAME.match(start.text):
                raise self.fail(f"{start.text!r} is not a schema name", start)
            return Type("ref", name=start.text)
        self.expect(".")
        constructor = self.name("a Zod type after 'z.'")
        self.expect("(")
        kind = constructor.text
        if kind in SCALARS:
            parsed = Type(kind)
        elif kind == "array":
            parsed = Type("array", item=self.type())
        elif kind == "record":
            parsed = self.record()
        elif kind == "object":
            parsed = self.object()
        elif kind == "enum":
            parsed = self.enum()
        else:
            raise self.fail(f"z.{kind}() is not supported", constructor)
        self.expect(")")
        return parsed

    def record(self) -> Type:
        first = self.type()
        if not self.at(","):
            return Type("record", item=first)
        if first != Type("string"):
            raise self.fail("a record's keys can only be z.string() (JSON object keys are strings)")
        self.advance()
        return Type("record", item=self.type())

    def object(self) -> Type:
        self.expect("{")
        fields: dict[str, Type] = {}
        while not self.at("}"):
            key = self.token
            if key.kind == "name":
                name = key.text
            elif key.kind == "string":
                name = _unquote(key.text)
            else:
                raise self.fail(f"expected a field name, found {_shown(key)}")
            self.advance()
            if name in fields:
                raise self.fail(f"field {name!r} is declared twice", key)
            if len(fields) >= MAX_FIELDS:
                raise self.fail(f"an object has at most {MAX_FIELDS} fields", key)
            self.expect(":")
            fields[name] = self.type()
            if not self.at(","):
                break
            self.advance()
        self.expect("}")
        return Type("object", fields=tuple(fields.items()))

    def enum(self) -> Type:
        self.expect("[")
        values: list[str] = []
        while not self.at("]"):
            if self.token.kind != "string":
                raise self.fail(f"z.enum([...]) takes strings, found {_shown(self.token)}")
            values.append(_unquote(self.advance().text))
            if not self.at(","):
                break
            self.advance()
        self.expect("]")
        if not values:
            raise self.fail("z.enum([...]) needs at least one value")
        return Type("enum", values=tuple(dict.fromkeys(values)))

    def number(self, *, count: bool) -> float:
        token = self.token
        if token.kind != "number":
            raise self.fail(f"expected a number, found {_shown(token)}")
        self.advance()
        value = float(token.text)
        if not math.isfinite(value):
            raise self.fail("the bound is not a finite number", token)
        if count and (value < 0 or not value.is_integer()):
            raise self.fail("a length bound is a whole number, 0 or more", token)
        return value

    def literal(self) -> None:
        """A `.default(...)` value: read and dropped (defaults are the agent's business; here
        a default only makes the field optional)."""
        token = self.advance()
        if token.kind in ("number", "string") or (token.kind == "name" and token.text in ("true", "false", "null")):
            return
        if token.kind == "punct" and token.text in "[{":
            self.expect("]" if token.text == "[" else "}")
            return
        raise self.fail("a default is a number, a string, true, false, null, [] or {}", token)

    def modifier(self, parsed: Type) -> Type:
        token = self.name("a modifier after '.'")
        name = token.text
        self.expect("(")
        if name == "optional":
            parsed = replace(parsed, optional=True)
        elif name == "nullable":
            parsed = replace(parsed, nullable=True)
        elif name == "default":
            self.literal()
            parsed = replace(parsed, optional=True)
        elif name == "describe":
            if self.token.kind != "string":
                raise self.fail(".describe() takes a string")
            self.advance()
        elif name in ("min", "max", "length", "nonempty"):
            parsed = self.bound(parsed, name, token)
        elif name == "int":
            self.applies(parsed, name, ("number",), token)
            parsed = replace(parsed, integer=True)
        elif name in STRING_FORMATS:
            self.applies(parsed, name, ("string",), token)
            if parsed.format not in (None, name):
                raise self.fail(f".{name}() conflicts with .{parsed.format}()", token)
            parsed = replace(parsed, format=name)
        else:
            raise self.fail(f".{name}() is not supported", token)
        self.expect(")")
        return parsed

    def applies(self, parsed: Type, name: str, kinds: tuple[str, ...], token: _Token) -> None:
        if parsed.kind not in kinds:
            allowed = " or ".join(f"z.{k}()" for k in kinds)
            raise self.fail(f".{name}() applies to {allowed}, not to {parsed.label}", token)

    def bound(self, parsed: Type, name: str, token: _Token) -> Type:
        kinds = ("string", "array") if name in ("length", "nonempty") else ("string", "number", "array")
        self.applies(parsed, name, kinds, token)
        value = 1.0 if name == "nonempty" else self.number(count=parsed.kind != "number")
        minimum = value if name in ("min", "length", "nonempty") else parsed.minimum
        maximum = value if name in ("max", "length") else parsed.maximum
        if minimum is not None and maximum is not None and minimum > maximum:
            raise self.fail(f"the minimum {minimum:g} is above the maximum {maximum:g}", token)
        return replace(parsed, minimum=minimum, maximum=maximum)


def parse(expression: str) -> Type:
    """The type an expression denotes; TypeSyntaxError when it is not in the language."""
    if not isinstance(expression, str):
        raise TypeSyntaxError(str(expression), 0, "a type expression is text")
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise TypeSyntaxError(expression[:40] + "...", 0, f"longer than {MAX_EXPRESSION_LENGTH} characters")
    if not expression.strip():
        raise TypeSyntaxError(expression, 0, "empty type expression")
    return _Parser(expression).whole()


def parse_definition(definition: str | Mapping[str, str]) -> Type:
    """A `schemas:` entry: a type expression, or a mapping of field -> type expression (the
    fields of a z.object; a field that may be absent says so with `.optional()`)."""
    if isinstance(definition, str):
        return parse(definition)
    if len(definition) > MAX_FIELDS:
        raise TypeSyntaxError("", 0, f"an object has at most {MAX_FIELDS} fields")
    return Type("object", fields=tuple((name, parse(text)) for name, text in definition.items()))


# --- Named schemas -------------------------------------------------------------------------------


def references(parsed: Type) -> set[str]:
    """The schema names a type mentions directly."""
    if parsed.kind == "ref":
        return {parsed.name}
    found: set[str] = set()
    if parsed.item is not None:
        found |= references(parsed.item)
    for _, child in parsed.fields:
        found |= references(child)
    return found


def _depth(parsed: Type, known: Mapping[str, int]) -> int:
    """Nesting of ``parsed``, a defined name counting as the depth of its definition (``known``)."""
    if parsed.kind == "ref":
        return known.get(parsed.name, 1)
    children = ([parsed.item] if parsed.item is not None else []) + [child for _, child in parsed.fields]
    return 1 + max((_depth(child, known) for child in children), default=0)


@dataclass(frozen=True)
class Schemas:
    """The named schemas of one manifest, acyclic and with bounded resolved depth."""

    types: Mapping[str, Type] = field(default_factory=dict)
    depths: Mapping[str, int] = field(default_factory=dict)

    def depth(self, parsed: Type) -> int:
        """Nesting once every defined name is replaced by its definition."""
        return _depth(parsed, self.depths)

    def unresolved(self, parsed: Type) -> list[str]:
        """Names the type reaches (directly or through defined schemas) that are not defined."""
        missing, seen, todo = [], set(), sorted(references(parsed))
        while todo:
            name = todo.pop(0)
            if name in seen:
                continue
            seen.add(name)
            if name in self.types:
                todo.extend(sorted(references(self.types[name])))
            else:
                missing.append(name)
        return missing


def compile_schemas(types: Mapping[str, Type]) -> Schemas:
    """Check the named schemas as a whole: no cycles (Zod needs z.lazy for recursion, which this
    language leaves out, and a cycle would make checking recurse without end), and no schema nested
    deeper than MAX_RESOLVED_DEPTH once the names it uses are resolved. SchemaError otherwise."""
    if len(types) > MAX_SCHEMAS:
        raise SchemaError(("schemas",), f"at most {MAX_SCHEMAS} schemas")
    depths: dict[str, int] = {}
    state: dict[str, str] = {}

    def visit(name: str, trail: tuple[str, ...]) -> None:
        if state.get(name) == "done":
            return
        if state.get(name) == "open":
            cycle = " -> ".join((*trail[trail.index(name) :], name))
            raise SchemaError(("schemas", name), f"schema {name!r} refers to itself ({cycle})")
        state[name] = "open"
        for other in sorted(references(types[name])):
            if other in types:
                visit(other, (*trail, name))
        depths[name] = _depth(types[name], depths)
        if depths[name] > MAX_RESOLVED_DEPTH:
            msg = f"schema {name!r} is nested {depths[name]} levels deep once resolved (at most {MAX_RESOLVED_DEPTH})"
            raise SchemaError(("schemas", name), msg)
        state[name] = "done"

    for name in sorted(types):
        visit(name, ())
    return Schemas(types=dict(types), depths=depths)


# --- Checking values -----------------------------------------------------------------------------


def json_kind(value: Any) -> str:
    """The JSON name of a decoded value's kind, as messages say it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _is_url(value: str) -> bool:
    """Zod's .url() accepts what `new URL()` parses; here: an absolute URL with a scheme and a
    host, without spaces, which is what a URL given to an agent to fetch has to be."""
    if any(c.isspace() for c in value):
        return False
    try:
        parts = urlsplit(value)
        return bool(re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*$", parts.scheme)) and bool(parts.hostname)
    except ValueError:
        return False


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return len(value) == 36


def _is_datetime(value: str) -> bool:
    """ISO 8601 with a zone, as the seed's `z.string().datetime()` (which wants the Z form)."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return False
    return "T" in value and parsed.tzinfo is not None


_FORMATS: dict[str, Callable[[str], object]] = {
    "url": _is_url,
    "email": _EMAIL.match,
    "uuid": _is_uuid,
    "datetime": _is_datetime,
}


_JSON_KIND = {"enum": "string", "record": "object"}  # the JSON kind each type accepts, when not its own


class _Checker:
    def __init__(self, schemas: Schemas, limit: int) -> None:
        self.schemas = schemas
        self.limit = limit
        self.found: list[Violation] = []

    @property
    def full(self) -> bool:
        return len(self.found) >= self.limit

    def add(self, loc: tuple[str | int, ...], msg: str, kind: str) -> None:
        if not self.full:
            self.found.append(Violation(loc, msg, kind))

    def check(self, expected: Type, value: Any, loc: tuple[str | int, ...]) -> None:
        if self.full:
            return
        if expected.kind == "ref":
            definition = self.schemas.types.get(expected.name)
            if definition is not None and not (value is None and expected.nullable):
                self.check(definition, value, loc)
            return  # an undefined schema is left unchecked
        if expected.kind in ("unknown", "any"):
            return
        if value is None:
            if not expected.nullable:
                self.add(loc, f"expected {expected.label}, got null", "type")
            return
        kind = json_kind(value)
        if kind != _JSON_KIND.get(expected.kind, expected.kind):
            self.add(loc, f"expected {expected.label}, got {kind}", "type")
            return
        checks: dict[str, Callable[[Type, Any, tuple[str | int, ...]], None]] = {
            "string": self._string,
            "number": self._number,
            "enum": self._enum,
            "array": self._array,
            "record": self._record,
            "object": self._object,
        }
        if expected.kind in checks:
            checks[expected.kind](expected, value, loc)

    def _bounds(self, expected: Type, size: float, loc: tuple[str | int, ...], what: str) -> None:
        if expected.minimum is not None and size < expected.minimum:
            self.add(loc, f"{what} {size:g} is below the minimum {expected.minimum:g}", "too_small")
        elif expected.maximum is not None and size > expected.maximum:
            self.add(loc, f"{what} {size:g} is above the maximum {expected.maximum:g}", "too_big")

    def _string(self, expected: Type, value: str, loc: tuple[str | int, ...]) -> None:
        self._bounds(expected, len(value), loc, "length")
        if expected.format and not _FORMATS[expected.format](value):
            shown = value if len(value) <= 80 else value[:77] + "..."
            self.add(loc, f"{shown!r} is not a valid {expected.format}", expected.format)

    def _number(self, expected: Type, value: float, loc: tuple[str | int, ...]) -> None:
        if isinstance(value, float) and not math.isfinite(value):
            self.add(loc, "expected a finite number", "type")
        elif isinstance(value, int) and abs(value) > sys.float_info.max:
            # No double holds it (a JavaScript agent's number, Zod's, neither): as 1e999 is refused.
            self.add(loc, "the number is out of range", "too_big")
        elif expected.integer and not float(value).is_integer():
            self.add(loc, f"expected an integer, got {value:g}", "integer")
        else:
            self._bounds(expected, value, loc, "value")

    def _enum(self, expected: Type, value: str, loc: tuple[str | int, ...]) -> None:
        if value not in expected.values:
            self.add(loc, f"{value!r} is not {expected.label}", "enum")

    def _array(self, expected: Type, value: list[Any], loc: tuple[str | int, ...]) -> None:
        self._bounds(expected, len(value), loc, "length")
        assert expected.item is not None
        for index, item in enumerate(value):
            if self.full:
                return
            self.check(expected.item, item, (*loc, index))

    def _record(self, expected: Type, value: dict[str, Any], loc: tuple[str | int, ...]) -> None:
        assert expected.item is not None
        for key, item in value.items():
            if self.full:
                return
            self.check(expected.item, item, (*loc, key))

    def _object(self, expected: Type, value: dict[str, Any], loc: tuple[str | int, ...]) -> None:
        for name, child in expected.fields:
            if name not in value:
                if not _may_be_absent(child, self.schemas):
                    self.add((*loc, name), f"required field {name!r} is missing", "missing")
                continue
            self.check(child, value[name], (*loc, name))


def _may_be_absent(expected: Type, schemas: Schemas) -> bool:
    return expected.optional or (
        expected.kind == "ref" and expected.name in schemas.types and schemas.types[expected.name].optional
    )


def check(
    expected: Type, value: Any, *, schemas: Schemas | None = None, limit: int = MAX_VIOLATIONS
) -> list[Violation]:
    """Every way ``value`` (decoded JSON) fails ``expected``, up to ``limit``; empty when it fits."""
    checker = _Checker(schemas or Schemas(), limit)
    checker.check(expected, value, ())
    return checker.found


def check_fields(
    declared: Iterable[tuple[str, Type, bool]],
    values: Any,
    *,
    schemas: Schemas | None = None,
    limit: int = MAX_VIOLATIONS,
    what: str = "value",
) -> list[Violation]:
    """Check a mapping of named values (a job's payload, an output's data) against declared
    (name, type, required) triples. Names not declared are left alone, as z.object does."""
    checker = _Checker(schemas or Schemas(), limit)
    if not isinstance(values, dict):
        checker.add((), f"expected an object of named values, got {json_kind(values)}", "type")
        return checker.found
    for name, expected, required in declared:
        if name not in values:
            if required:
                checker.add((name,), f"required {what} {name!r} is missing", "missing")
            continue
        checker.check(expected, values[name], (name,))
    return checker.found


# --- A manifest's declarations -------------------------------------------------------------------


@dataclass(frozen=True)
class Declared:
    """One input or output of a manifest, ready to check."""

    name: str
    text: str  # the expression as written ("" for an output declared by its contract only)
    type: Type
    required: bool
    contract: str | None = None
    unchecked: tuple[str, ...] = ()  # names it reaches that resolve nowhere (versions stored before the rule)


@dataclass(frozen=True)
class ManifestTypes:
    schemas: Schemas
    inputs: tuple[Declared, ...]
    outputs: tuple[Declared, ...]

    def check_inputs(self, payload: Any) -> list[Violation]:
        """The payload's violations of the declared inputs (paths start at the input's name)."""
        declared = [(d.name, d.type, d.required) for d in self.inputs]
        return check_fields(declared, payload, schemas=self.schemas, what="input")


def _lenient(text: Any) -> Type:
    """A stored expression: a manifest stored before types were checked may hold one that does
    not parse; it is left unchecked rather than failing every job of that version."""
    try:
        return parse_definition(text) if isinstance(text, dict) else parse(text)
    except (TypeSyntaxError, TypeError, AttributeError):
        return Type("unknown")


def from_document(document: Mapping[str, Any], registry: Mapping[str, Any] | None = None) -> ManifestTypes:
    """The declarations of a stored manifest document (its canonical JSON form), its names resolved
    in its own `schemas:` first, then in ``registry`` (the registry definitions stored with it)."""
    defined = {**(registry or {}), **(document.get("schemas") or {})}
    named = {name: _lenient(text) for name, text in defined.items()}
    try:
        schemas = compile_schemas(named)
    except SchemaError:
        schemas = Schemas()  # legacy rows only: every name left unchecked
    inputs = tuple(
        Declared(
            spec["name"],
            spec["type"],
            parsed,
            bool(spec.get("required", True)),
            unchecked=tuple(schemas.unresolved(parsed)),
        )
        for spec in document.get("inputs") or []
        for parsed in [_lenient(spec["type"])]
    )
    outputs = []
    for spec in document.get("outputs") or []:
        text = spec.get("type") or ""
        parsed = _lenient(text) if text else Type("unknown")
        required = not parsed.optional
        unchecked = tuple(schemas.unresolved(parsed))
        outputs.append(Declared(spec["name"], text, parsed, required, spec.get("contract"), unchecked))
    return ManifestTypes(schemas, inputs, tuple(outputs))
