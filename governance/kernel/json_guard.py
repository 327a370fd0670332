"""The JSON every body is decoded with: once, refusing what PostgreSQL cannot store.

NUL characters (PostgreSQL refuses them in ``text`` and in JSONB strings), non-finite numbers
(``NaN``, ``Infinity``, ``-Infinity`` and overflowing literals such as ``1e999``, which Python's json
accepts and JSONB does not) and nesting past MAX_DEPTH would otherwise turn into a 500 at the
database; here they are a 422 naming each place. The API's parser (validation.GuardedParser) and
the operations that read a raw body (a JSON manifest, a watch note, a webhook delivery) all decode
through ``decode``, so no body is decoded twice.

Pure: no Django import.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_DEPTH = 200


class _NonFinite(float):
    """What a `NaN`/`Infinity`/`-Infinity` literal decodes to: the float Python's json would give,
    remembering its literal so the walk can say where it was and what it read."""

    literal: str

    def __new__(cls, literal: str) -> _NonFinite:
        number = super().__new__(cls, literal)
        number.literal = literal
        return number


def error(loc: list[Any], msg: str, kind: str) -> dict[str, Any]:
    return {"loc": loc, "msg": msg, "type": kind}


Where = tuple[Any, ...]  # a location pattern: keys, and "*" for any index of a list


def _matches(where: list[Any], pattern: Where) -> bool:
    return len(where) == len(pattern) and all(p == "*" or p == w for w, p in zip(where, pattern, strict=True))


def json_errors(value: Any, loc: list[Any], *, numbers_at: tuple[Where, ...] = ()) -> list[dict[str, Any]]:
    """Every NUL character (in keys or strings) and every non-finite number of a decoded JSON value,
    each with its path. Iterative: a deeply nested document must not exhaust the stack here.

    ``numbers_at``: locations (patterns) whose whole value may hold non-finite numbers, because
    the operation judges them itself (``CONTRACT_OUTPUTS``)."""
    found: list[dict[str, Any]] = []
    stack: list[tuple[Any, list[Any], bool]] = [(value, loc, False)]
    while stack:
        item, where, lenient = stack.pop()
        lenient = lenient or any(_matches(where, pattern) for pattern in numbers_at)
        if len(where) - len(loc) > MAX_DEPTH:
            found.append(error(where, f"nested more than {MAX_DEPTH} levels deep", "json_depth"))
            continue
        if isinstance(item, str):
            if "\x00" in item:
                found.append(error(where, "text must not contain the NUL character (\\u0000)", "string_nul"))
        elif isinstance(item, _NonFinite):
            if not lenient:
                found.append(error(where, f"{item.literal} is not a JSON number", "finite_number"))
        elif isinstance(item, float):
            if not lenient and not math.isfinite(item):
                found.append(error(where, "the number is out of range", "finite_number"))
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                if "\x00" in key:
                    msg = "keys must not contain the NUL character (\\u0000)"
                    found.append(error([*where, key], msg, "string_nul"))
                stack.append((child, [*where, key], lenient))
        elif isinstance(item, list):
            stack.extend((child, [*where, index], lenient) for index, child in reversed(list(enumerate(item))))
    return found


class BodyErrors(ValueError):
    """A JSON document that decodes but holds what no operation can store, with every error's path."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__(f"{len(errors)} error(s) in the body")
        self.errors = errors


def decode(body: bytes | str, *, numbers_at: tuple[Where, ...] = ()) -> Any:
    """The body decoded once, as Python's json decodes it (``NaN`` and ``Infinity`` as floats),
    for whoever reads it next. BodyErrors for a NUL character, a non-finite number outside
    ``numbers_at`` or nesting past MAX_DEPTH; json's own ValueError for what is not JSON."""
    try:
        value = json.loads(body, parse_constant=_NonFinite)
    except RecursionError:
        raise BodyErrors([error(["body"], f"nested more than {MAX_DEPTH} levels deep", "json_depth")]) from None
    errors = json_errors(value, ["body"], numbers_at=numbers_at)
    if errors:
        raise BodyErrors(errors)
    return value
