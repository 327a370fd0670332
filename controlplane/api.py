"""The root NinjaAPI at /api/v1: authentication, one error shape, and every app's router."""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import ImproperlyConfigured, ObjectDoesNotExist, PermissionDenied, RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI, Schema, Status
from ninja.errors import AuthenticationError, HttpError, ValidationError

from governance.kernel import exceptions, health, validation
from governance.kernel.auth import any_key
from governance.kernel.logs import loggable_path
from governance.kernel.principals import Principal
from governance.kernel.problems import (
    DATABASE_RETRY_AFTER,
    PROBLEM_CONTENT_TYPE,
    database_unavailable,
    problem_response,
)
from governance.kernel.services import record_refusal, refused_key

logger = logging.getLogger(__name__)
security_log = logging.getLogger("governance.security")


# Every error body, in every operation: its own name, so that generated clients get one error class and no
# response model can take it over.
PROBLEM_SCHEMA_NAME = "ProblemDetails"
PROBLEM_SCHEMA = {
    "title": PROBLEM_SCHEMA_NAME,
    "type": "object",
    "description": "RFC 9457 problem details; a 422 lists every failing field in `errors`.",
    "required": ["type", "title", "status", "detail", "errors"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "errors": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["loc", "msg", "type"],
                "properties": {
                    "loc": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
                    "msg": {"type": "string"},
                    "type": {"type": "string"},
                },
            },
        },
    },
    "additionalProperties": True,
}
COMMON_PROBLEMS = {
    400: "Bad request (malformed HTTP).",
    403: "The key may not do this.",
    404: "No such object, or not visible to this key.",
    409: "Refused state transition or conflicting write.",
    422: "Invalid path, query or body; `errors` names each field.",
    429: "Rate limited; see Retry-After.",
    503: "A dependency (the database) is unavailable; see Retry-After.",
}
BODY_PROBLEMS = {413: "Body over the size limit.", 415: "Body of a media type the operation does not take."}


def _with_problem_responses(schema: dict) -> dict:
    """Every operation declares the problems it can answer, all as application/problem+json: the
    common ones here, once, rather than in each operation's `response=`."""
    schemas = schema.setdefault("components", {}).setdefault("schemas", {})
    if PROBLEM_SCHEMA_NAME in schemas:  # a response model of that name would silently become the error body
        raise ImproperlyConfigured(f"a schema is named {PROBLEM_SCHEMA_NAME}, the name of the error body")
    schemas[PROBLEM_SCHEMA_NAME] = PROBLEM_SCHEMA
    reference = {"$ref": f"#/components/schemas/{PROBLEM_SCHEMA_NAME}"}
    for methods in schema.get("paths", {}).values():
        for operation in methods.values():
            responses = operation["responses"] = {str(k): v for k, v in operation.get("responses", {}).items()}
            for status, response in responses.items():
                content = response.get("content") or {}
                if int(status) >= 400 and "application/json" in content:
                    response["content"] = {PROBLEM_CONTENT_TYPE: content.pop("application/json")}
            declared = {**COMMON_PROBLEMS, **(BODY_PROBLEMS if "requestBody" in operation else {})}
            if operation.get("security"):
                declared[401] = "No valid API key."
            for status, description in sorted(declared.items()):
                responses.setdefault(
                    str(status),
                    {
                        "description": description,
                        "content": {PROBLEM_CONTENT_TYPE: {"schema": reference}},
                    },
                )
    return schema


def _optional_bodies_as_absent(schema: dict) -> dict:
    """An optional body (`data: X | None = None`) is declared by ninja as `anyOf: [X, null]` with
    `required: false`: the null says again that the body may be left out, and generated clients then
    send a literal `null` (or an unset marker) when it is. Declared as X alone, not required, a
    client leaves the body out, which the server takes as it always has."""
    for methods in schema.get("paths", {}).values():
        for operation in methods.values():
            body = operation.get("requestBody")
            if not body or body.get("required"):
                continue
            for media in body.get("content", {}).values():
                alternatives = media.get("schema", {}).get("anyOf", [])
                if len(alternatives) == 2 and {"type": "null"} in alternatives:
                    media["schema"] = next(a for a in alternatives if a != {"type": "null"})
    return schema


class GovernanceAPI(NinjaAPI):
    def get_openapi_schema(self, *args: Any, **kwargs: Any) -> dict:
        return _with_problem_responses(_optional_bodies_as_absent(super().get_openapi_schema(*args, **kwargs)))


api = GovernanceAPI(
    title="Agent governance control plane",
    version="1",
    description=(
        "REST API for agents and operators. Authenticate with `Authorization: Bearer <key>`; "
        "errors are `application/problem+json`."
    ),
    auth=any_key,
    parser=validation.GuardedParser(),
    urls_namespace="api",
    docs_url="/docs",
    openapi_url="/openapi.json",
)


def _location(loc: Any) -> list:
    """Field path of a validation error, without ninja's internal parameter name.

    ninja reports a body field as ("body", "<python argument>", "field", ...); clients know
    only ("body", "field", ...).
    """
    loc = list(loc)
    if len(loc) >= 2 and loc[0] in {"body", "query", "path"} and loc[1] in {"data", "filters", "params"}:
        del loc[1]
    return loc


@api.exception_handler(ValidationError)
def _validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    errors = [
        {"loc": _location(err.get("loc", ())), "msg": err.get("msg", ""), "type": err.get("type", "")}
        for err in exc.errors
    ]
    return problem_response(422, detail="The request is invalid; see errors.", errors=errors)


@api.exception_handler(exceptions.InvalidInput)
def _invalid_input(request: HttpRequest, exc: exceptions.InvalidInput) -> HttpResponse:
    return problem_response(422, detail=exc.detail, errors=exc.errors, **exc.extra)


def _audit_refusal(request: HttpRequest, status: int, detail: str, **data: Any) -> None:
    """Every refusal of a caller we can name is kept in the audit trail (see services.record_refusal).
    A request without any key of ours is only logged: anonymous traffic must not be able to fill
    the database."""
    principal = getattr(request, "auth", None)
    if isinstance(principal, Principal):
        actor = principal.label
    else:
        token = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        api_key = refused_key(token) if token else None
        if api_key is None:
            security_log.warning(
                "[api] refused %s %s: %s (no valid key)", request.method, loggable_path(request.path), status
            )
            return
        actor = f"{api_key.owner_label} (key {api_key.prefix})"
        data = {**data, "key": api_key.prefix, "key_revoked": api_key.revoked_at is not None}
    security_log.warning("[api] refused %s %s: %s for %s", request.method, loggable_path(request.path), status, actor)
    record_refusal(actor=actor, method=request.method or "", path=request.path, status=status, detail=detail, **data)


@api.exception_handler(AuthenticationError)
def _unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    _audit_refusal(request, 401, "no valid API key")
    return problem_response(
        401, detail="A valid API key is required (Authorization: Bearer <key>).", headers={"WWW-Authenticate": "Bearer"}
    )


@api.exception_handler(exceptions.Unauthorized)
def _unauthorized(request: HttpRequest, exc: exceptions.Unauthorized) -> HttpResponse:
    _audit_refusal(request, 401, exc.detail)  # anonymous: logged only, never a row
    return problem_response(401, detail=exc.detail)


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if isinstance(exc.__cause__, exceptions.InvalidInput):
        # The body's parser refused what it decoded (validation.GuardedParser); ninja wraps it.
        return _invalid_input(request, exc.__cause__)
    if exc.status_code == 400 and "parse" in str(exc).lower():
        # Malformed JSON is an invalid body like any other.
        return problem_response(
            422, detail=str(exc), errors=[{"loc": ["body"], "msg": str(exc), "type": "json_invalid"}]
        )
    return problem_response(exc.status_code, detail=str(exc))


@api.exception_handler(exceptions.Conflict)
def _conflict(request: HttpRequest, exc: exceptions.Conflict) -> HttpResponse:
    return problem_response(409, detail=exc.detail, **exc.extra)


@api.exception_handler(exceptions.Forbidden)
@api.exception_handler(PermissionDenied)
def _forbidden(request: HttpRequest, exc: Exception) -> HttpResponse:
    detail = getattr(exc, "detail", "") or "You may not do this."
    extra = getattr(exc, "extra", {})
    _audit_refusal(request, 403, detail, **extra)
    return problem_response(403, detail=detail, **extra)


@api.exception_handler(exceptions.NotFound)
@api.exception_handler(Http404)
@api.exception_handler(ObjectDoesNotExist)
def _not_found(request: HttpRequest, exc: Exception) -> HttpResponse:
    detail = getattr(exc, "detail", "") or "Not found."
    if getattr(exc, "hidden", False):  # it exists, outside the caller's reach: told nothing more
        _audit_refusal(request, 404, detail, hidden=True)
    return problem_response(404, detail=detail)


@api.exception_handler(exceptions.RateLimited)
def _rate_limited(request: HttpRequest, exc: exceptions.RateLimited) -> HttpResponse:
    return problem_response(429, detail=exc.detail, headers={"Retry-After": str(exc.retry_after)}, **exc.extra)


@api.exception_handler(exceptions.Unavailable)
def _unavailable(request: HttpRequest, exc: exceptions.Unavailable) -> HttpResponse:
    return problem_response(503, detail=exc.detail, headers={"Retry-After": str(exc.retry_after)}, **exc.extra)


@api.exception_handler(RequestDataTooBig)
def _too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    return problem_response(413, detail="Request body exceeds the size limit.")


@api.exception_handler(OperationalError)
@api.exception_handler(InterfaceError)
def _database_unavailable(request: HttpRequest, exc: Exception) -> HttpResponse:
    logger.error("[api] database unavailable: %s %s: %s", request.method, loggable_path(request.path), exc)
    return database_unavailable()


@api.exception_handler(RecursionError)
def _too_deep(request: HttpRequest, exc: RecursionError) -> HttpResponse:
    # Only input nests without bound (YAML front matter, JSON in a text field, ...).
    msg = "the document is nested too deeply"
    return problem_response(422, detail=msg, errors=[{"loc": ["body"], "msg": msg, "type": "nesting_depth"}])


@api.exception_handler(Exception)
def _unexpected(request: HttpRequest, exc: Exception) -> HttpResponse:
    # Never a traceback in an answer; the log has it.
    logger.exception("[api] unhandled error: %s %s", request.method, loggable_path(request.path))
    return problem_response(500, detail="Internal error; it has been logged.")


class HeartbeatOut(Schema):
    status: str
    last_run: str | None = None
    age_seconds: float | None = None


class HealthOut(Schema):
    status: str
    database: str
    vector: str
    broker: str
    heartbeat: HeartbeatOut


class HealthProblemOut(Schema):
    type: str
    title: str
    status: int
    detail: str
    errors: list[dict[str, Any]]
    database: str
    vector: str
    broker: str
    heartbeat: HeartbeatOut


class LiveOut(Schema):
    status: str


@api.get(
    "/health", operation_id="get_health", auth=None, response={200: HealthOut, 503: HealthProblemOut}, tags=["health"]
)
def get_health(request: HttpRequest) -> Status | HttpResponse:
    """Database, pgvector and broker, each really exercised; plus when the heartbeat task last ran.
    503 (problem+json, with Retry-After) when the database or pgvector fails, with the same report."""
    report = health.report()
    if report["status"] == "ok":
        return Status(200, report)
    return _dependency_problem(report, [name for name in ("database", "vector") if report[name] != "ok"])


@api.get("/health/live", operation_id="get_health_live", auth=None, response={200: LiveOut}, tags=["health"])
def get_health_live(request: HttpRequest) -> Status:
    """Liveness: the process answers. No dependency is checked, so a monitor restarts the web
    server only when it is stuck, never because the database or broker is down."""
    return Status(200, {"status": "ok"})


@api.get(
    "/health/ready",
    operation_id="get_health_ready",
    auth=None,
    response={200: HealthOut, 503: HealthProblemOut},
    tags=["health"],
)
def get_health_ready(request: HttpRequest) -> Status | HttpResponse:
    """Readiness: the report of /health, 200 only when the database, pgvector and the broker answer
    and the heartbeat ran within HEARTBEAT_STALE_AFTER; else 503 naming what fails (a heartbeat
    never seen, on a fresh start, included)."""
    report = health.report()
    failing = health.not_ready(report)
    if not failing:
        return Status(200, report)
    return _dependency_problem(report, failing)


def _dependency_problem(report: dict[str, Any], failing: list[str]) -> HttpResponse:
    def state(name: str) -> str:
        return report[name]["status"] if name == "heartbeat" else report[name]

    components = {name: report[name] for name in ("database", "vector", "broker", "heartbeat")}
    return problem_response(
        503,
        detail=f"Unavailable: {', '.join(failing)}.",
        errors=[{"loc": [name], "msg": state(name), "type": "dependency"} for name in failing],
        headers={"Retry-After": str(DATABASE_RETRY_AFTER)},
        **components,
    )


def _mount_routers() -> None:
    from agents.api import agents, approvals, jobs, registries, triggers
    from gateway import api as gateway
    from governance.contracts import api as contracts
    from governance.reviews import api as reviews
    from memory.api import learnings, notes
    from memory.subjects import api as subjects
    from sessions.api import automations, sessions

    api.add_router("/agents", agents.router)
    api.add_router("/jobs", jobs.router)
    api.add_router("/triggers", triggers.router)
    api.add_router("/approvals", approvals.router)
    api.add_router("/registries", registries.router)
    api.add_router("/reviews", reviews.router)
    api.add_router("/sessions", sessions.router)
    api.add_router("/automations", automations.router)
    api.add_router("/gateway/upstreams", gateway.router)

    # Notes and subjects hang under the learnings router, as they always have: an operation carries
    # the tags of every router above it, and the OpenAPI document (clients' tags) must not change.
    learnings.router.add_router("", notes.router)
    learnings.router.add_router("", subjects.router)
    api.add_router("/memory", learnings.router)
    api.add_router("/contracts", contracts.router)


_mount_routers()
