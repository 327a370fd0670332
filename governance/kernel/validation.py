"""Input checks of every API request, and the bounded pagination every list uses.

What PostgreSQL or Python would otherwise turn into a 500 is refused with a 422 naming the field.
Before any view (middleware.ApiInputGuardMiddleware): NUL characters in the path, the query and a
body that is not JSON, integers of the query string beyond PostgreSQL's bigint, and a body of a
media type the operation does not declare (415). A JSON body is checked where it is decoded, once,
by the API's parser (``GuardedParser``, through json_guard): NUL characters and non-finite
numbers. One exception: a model output under audit (``CONTRACT_OUTPUTS``) may hold non-finite
numbers, which the contract validator records as a violation.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Protocol

from django.http import HttpRequest
from ninja import Field, Schema
from ninja.pagination import LimitOffsetPagination
from ninja.parser import Parser

from governance.kernel import json_guard, registry
from governance.kernel.exceptions import InvalidInput
from governance.kernel.json_guard import error
from governance.kernel.registry import Slot

MAX_LIMIT = 1000
MAX_OFFSET = 2**31 - 1
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


class OpenApiSource(Protocol):
    def get_openapi_schema(self, *, path_prefix: str | None = None) -> Any: ...


# The project's root API (controlplane), as a function that returns it: the input guard is below
# every app and cannot import it, and only a web process that checks a body needs it loaded.
GUARDED_API: Slot[Callable[[], OpenApiSource]] = registry.slot(
    "input_guard_api", "the API whose operations' declared body media types the input guard checks"
)
API_PREFIX = "/api/v1/"

Where = json_guard.Where

# Where a model's output is the value under audit (seed 000), a non-finite number is what the
# contract validator reports as a `not_serializable` violation, stored and counted in the
# compliance figures: refusing it with a 422 would hide it from them. NUL characters stay refused.
CONTRACT_OUTPUTS: tuple[tuple[str, re.Pattern[str], tuple[Where, ...]], ...] = (
    ("POST", re.compile(r"^contracts/audit/?$"), (("body", "items", "*", "output"),)),
    ("POST", re.compile(r"^contracts/[^/]+/validate/?$"), (("body", "output"),)),
)


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
    api = GUARDED_API.get()()
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


class GuardedParser(Parser):
    """The root API's parser: each JSON body decoded once (json_guard), with NUL characters and
    non-finite numbers refused as InvalidInput at their paths. django-ninja turns any parser
    exception into an HttpError caused by it; the root API's handler answers the InvalidInput."""

    def parse_body(self, request: HttpRequest) -> Any:
        api_path = request.path_info.removeprefix(API_PREFIX)
        try:
            return json_guard.decode(request.body, numbers_at=numbers_allowed(request.method or "", api_path))
        except json_guard.BodyErrors as exc:
            raise InvalidInput("The request is invalid; see errors.", errors=exc.errors) from exc
