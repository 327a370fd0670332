"""Helpers every page shares: which template an htmx request gets, and the 404 handler."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.defaults import page_not_found

from governance.kernel.problems import problem_response


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
