"""Request-level guards that must run before any view reads the body."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from governance.problems import PROBLEM_CONTENT_TYPE, problem_response


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
