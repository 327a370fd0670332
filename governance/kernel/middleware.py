"""Request-level middleware: the request id, and the guards that must run before any view reads the body."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.log import log_response

from governance.kernel import logs, tracing, validation
from governance.kernel.problems import PROBLEM_CONTENT_TYPE, problem_response


class RequestIdMiddleware:
    """Give every request an id (the client's X-Request-ID when it is a short safe token, else a
    new one), answer it in X-Request-ID, and put it in the log lines and on the trace of the
    request (governance/kernel/logs.py), and of the tasks it queues."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = logs.request_id(request.headers.get("X-Request-ID"))
        token = logs.context.set({"request_id": request_id})
        try:
            tracing.annotate_request(request_id)
            response = self.get_response(request)
            if response.status_code >= 400:
                # Django's own line for an error answer ("Not Found: /path"), written while the
                # request's ids are still current; Django then sees it logged and skips its own.
                # The path as logs may keep it: no subject key (request.path has no query string).
                path = logs.loggable_path(request.path)
                log_response("%s: %s", response.reason_phrase, path, response=response, request=request)
        finally:
            logs.context.reset(token)
        response["X-Request-ID"] = request_id
        return response


class RequestSizeLimitMiddleware:
    """Refuse bodies over MAX_REQUEST_BODY_BYTES with 413 before they are read.

    Django only raises RequestDataTooBig when form data is parsed; JSON bodies read through
    ``request.body`` would otherwise be loaded whole. Chunked bodies without a length are
    capped by DATA_UPLOAD_MAX_MEMORY_SIZE, which the API error handler also maps to 413.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = settings.MAX_REQUEST_BODY_BYTES
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > limit:
            return problem_response(
                413,
                detail=f"Request body is {length} bytes; the limit is {limit} bytes.",
            )
        return self.get_response(request)


class ApiProblemMiddleware:
    """Give every API error the problem+json shape, including those produced outside the
    API's own handlers (405 from the router, 400 from Django's host checks, ...)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            response.status_code >= 400
            and request.path.startswith("/api/")
            and not response.get("Content-Type", "").startswith(PROBLEM_CONTENT_TYPE)
        ):
            headers = {name: response[name] for name in ("Allow", "Retry-After") if response.has_header(name)}
            return problem_response(response.status_code, headers=headers)
        return response


class ApiInputGuardMiddleware:
    """Refuse, before any view, what no operation can store (governance/kernel/validation.py): NUL
    characters in the path, the query or a body that is not JSON, query bounds past PostgreSQL's
    bigint (422 naming each field), and a body of a media type the operation does not declare
    (415). A JSON body is checked where it is decoded, once (validation.GuardedParser)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path_info.startswith(validation.API_PREFIX):
            return self.get_response(request)
        errors = validation.path_errors(request) + validation.query_errors(request)
        if errors:
            return problem_response(422, detail="The request is invalid; see errors.", errors=errors)
        refused = self._body_refusal(request)
        return refused or self.get_response(request)

    @staticmethod
    def _body_refusal(request: HttpRequest) -> HttpResponse | None:
        if request.method not in {"POST", "PUT", "PATCH"}:
            return None
        accepted = validation.accepted_media_types(request.method, request.path_info[len(validation.API_PREFIX) :])
        body = request.body
        if accepted is None or not body:
            return None
        kind = validation.media_type(request)
        if kind not in accepted:
            listed = ", ".join(sorted(accepted))
            return problem_response(
                415,
                detail=f"This operation takes a body of type {listed}, not {kind or 'an untyped body'}.",
                errors=[{"loc": ["header", "Content-Type"], "msg": f"expected {listed}", "type": "media_type"}],
            )
        if not validation.is_json(kind) and b"\x00" in body:
            errors = [validation.error(["body"], "must not contain the NUL character", "string_nul")]
            return problem_response(422, detail="The request is invalid; see errors.", errors=errors)
        return None
