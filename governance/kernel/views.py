"""Helpers every page shares: which template an htmx request gets, and the 404 and 500 handlers."""

from __future__ import annotations

import logging
import sys
from typing import Any

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template import loader
from django.views.defaults import page_not_found
from django.views.defaults import server_error as default_server_error

from governance.kernel.logs import loggable_path
from governance.kernel.problems import DATABASE_RETRY_AFTER, database_unavailable, problem_response

logger = logging.getLogger(__name__)


def is_partial(request: HttpRequest) -> bool:
    """htmx swaps get the partial; a history restore after a cache miss needs the whole page."""
    return bool(request.htmx) and not request.htmx.history_restore_request


def render_page(request: HttpRequest, page: str, partial: str, context: dict[str, Any]) -> HttpResponse:
    """The whole page for a visit, only the swapped part for an htmx request."""
    return render(request, partial if is_partial(request) else page, context)


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """API clients get problem+json for unknown paths too; people get the HTML page."""
    if request.path.startswith("/api/"):
        return problem_response(404, detail=f"No endpoint at {request.path}.")
    return page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    """An uncaught exception: a database outage is a 503 that says so (problem+json for /mcp and
    the API, a page for people, both with Retry-After), anything else the 500 page. Django calls
    this inside its ``except`` block, so the exception is at hand; the session and user
    middlewares fail first in an outage, so no view's handler ever sees it."""
    if not isinstance(sys.exc_info()[1], OperationalError | InterfaceError):
        return default_server_error(request)
    logger.error("[web] database unavailable: %s %s", request.method, loggable_path(request.path))
    if request.path.startswith(("/api/", "/mcp")):
        return database_unavailable()
    # No request context: the page must render without the database (no user, no navigation).
    response = HttpResponse(loader.get_template("503.html").render(), status=503)
    response["Retry-After"] = str(DATABASE_RETRY_AFTER)
    return response
