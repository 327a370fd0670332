"""Input checks every API request passes before any view runs (see middleware.ApiInputGuardMiddleware),
and the bounded pagination every list uses.

What PostgreSQL or Python would otherwise turn into a 500 is refused here with a 422 naming the field:
NUL characters in text (PostgreSQL refuses them in `text` and in JSONB strings), non-finite numbers
(`NaN`, `Infinity`, `-Infinity` and overflowing literals such as `1e999`, which Python's json
accepts and JSONB does not), and integers of the query string beyond PostgreSQL's bigint. A body of
a media type the operation does not declare is refused with 415. One exception: a model output
under audit (``CONTRACT_OUTPUTS``) may hold non-finite numbers, which the contract validator
records as a violation.
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.utils.module_loading import import_string
from ninja import Field, Schema
from ninja.pagination import LimitOffsetPagination

MAX_LIMIT = 1000
MAX_OFFSET = 2**31 - 1
MAX_DEPTH = 200
BIGINT = 2**63 - 1

# Media types read as their canonical form: the manifest PUT takes every usual YAML spelling, the
# watch note every usual Markdown one (agents.api.agents.YAML_TYPES, memory.api.notes.MARKDOWN_TYPES).
MEDIA_ALIASES = {
    "application/x-yaml": "application/yaml",
    "text/yaml": "application/yaml",
    "text/x-yaml": "application/yaml",
    "text/x-markdown": "text/markdown",
    "text/plain": "text/markdown",
}


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    """ninja's limit/offset pagination with both bounds stated in the OpenAPI document: an offset
    past PostgreSQL's bigint would otherwise reach the database and fail there."""

    class Input(Schema):
        limit: int = Field(100, ge=1, le=MAX_LIMIT, description=f"Items per page, 1 to {MAX_LIMIT}.")
        offset: int = Field(0, ge=0, le=MAX_OFFSET, description=f"Items to skip, 0 to {MAX_OFFSET}.")


class _NonFinite:
    """What a `NaN`/`Infinity`/`-Infinity` literal decodes to, so the walk can say where it was."""

    def __init__(self, literal: str) -> None:
        self.literal = literal


def error(loc: list[Any], msg: str, kind: str) -> dict[str, Any]:
    return {"loc": loc, "msg": msg, "type": kind}


Where = tuple[Any, ...]  # a location pattern: keys, and "*" for any index of a list

# Where a model's output is the value under audit (seed 000), a non-finite number is what the
# contract validator reports as a `not_serializable` violation, stored and counted in the
# compliance figures: refusing it with a 422 would hide it from them. NUL characters stay refused.
CONTRACT_OUTPUTS: tuple[tuple[str, re.Pattern[str], tuple[Where, ...]], ...] = (
    ("POST", re.compile(r"^contracts/audit/?$"), (("body", "items", "*", "output"),)),
    ("POST", re.compile(r"^contracts/[^/]+/validate/?$"), (("body", "output"),)),
)


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


def decode_json(body: bytes, *, numbers_at: tuple[Where, ...] = ()) -> tuple[Any, list[dict[str, Any]]] | None:
    """The body decoded with non-finite literals kept visible, and its errors; None when it is not
    JSON at all (the API's own parser reports that)."""
    try:
        value = json.loads(body, parse_constant=_NonFinite)
    except RecursionError:
        return None, [error(["body"], f"nested more than {MAX_DEPTH} levels deep", "json_depth")]
    except ValueError:  # not JSON, or not UTF-8: the operation's parser answers 422
        return None
    return value, json_errors(value, ["body"], numbers_at=numbers_at)


def numbers_allowed(method: str, api_path: str) -> tuple[Where, ...]:
    """Where the operation at ``api_path`` (below /api/v1/) takes non-finite numbers."""
    for operation_method, pattern, places in CONTRACT_OUTPUTS:
        if operation_method == method and pattern.match(api_path):
            return places
    return ()


_INTEGER = re.compile(r"[+-]?\d+")


def query_errors(request: HttpRequest) -> list[dict[str, Any]]:
    found = []
    for name, values in request.GET.lists():
        if "\x00" in name or any("\x00" in value for value in values):
            found.append(error(["query", name], "must not contain the NUL character", "string_nul"))
        elif name in {"limit", "offset"} and any(
            _INTEGER.fullmatch(v.strip()) and abs(int(v)) > BIGINT for v in values
        ):
            found.append(error(["query", name], "the number is out of range", "int_range"))
    return found


def path_errors(request: HttpRequest) -> list[dict[str, Any]]:
    if "\x00" not in request.path_info:
        return []
    from django.urls import Resolver404, resolve

    msg = "must not contain the NUL character"
    try:
        match = resolve(request.path_info)
    except Resolver404:
        return [error(["path"], msg, "string_nul")]
    named = [name for name, value in match.kwargs.items() if isinstance(value, str) and "\x00" in value]
    return [error(["path", name], msg, "string_nul") for name in named] or [error(["path"], msg, "string_nul")]


def media_type(request: HttpRequest) -> str:
    kind = (request.content_type or "").strip().lower()
    return MEDIA_ALIASES.get(kind, kind)


def is_json(kind: str) -> bool:
    return kind == "application/json" or kind.endswith("+json")


@lru_cache(maxsize=1)
def _body_media_types() -> list[tuple[re.Pattern, str, frozenset[str]]]:
    """(path pattern, method, media types) of every API operation that declares a request body."""
    api = import_string(settings.INPUT_GUARD_API)
    operations = []
    schema = api.get_openapi_schema(path_prefix="")
    # Literal paths first: POST jobs/validate is not POST jobs/{job_id}.
    for path, methods in sorted(schema["paths"].items(), key=lambda item: item[0].count("{")):
        pattern = re.compile("^/?" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(path.lstrip("/"))) + "/?$")
        for method, operation in methods.items():
            content = (operation.get("requestBody") or {}).get("content")
            if content:
                operations.append((pattern, method.upper(), frozenset(content)))
    return operations


def accepted_media_types(method: str, api_path: str) -> frozenset[str] | None:
    """The media types the operation at ``api_path`` (below /api/v1/) takes; None when it takes no body
    or is unknown."""
    for pattern, operation_method, kinds in _body_media_types():
        if operation_method == method and pattern.match(api_path):
            return kinds
    return None
