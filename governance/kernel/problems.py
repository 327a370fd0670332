"""RFC 9457 problem details, the one error shape of the API."""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

from django.http import HttpResponse

PROBLEM_CONTENT_TYPE = "application/problem+json"


def problem_body(status: int, *, detail: str = "", errors: list[dict] | None = None, **extra: Any) -> dict:
    title = HTTPStatus(status).phrase
    body: dict[str, Any] = {
        "type": f"https://httpstatuses.io/{status}",
        "title": title,
        "status": status,
        "detail": detail or title,
        "errors": errors or [],
    }
    body.update(extra)
    return body


def problem_response(
    status: int, *, detail: str = "", errors: list[dict] | None = None, headers: dict | None = None, **extra: Any
) -> HttpResponse:
    response = HttpResponse(
        json.dumps(problem_body(status, detail=detail, errors=errors, **extra), default=str),
        status=status,
        content_type=PROBLEM_CONTENT_TYPE,
    )
    for name, value in (headers or {}).items():
        response[name] = value
    return response


DATABASE_RETRY_AFTER = 30  # seconds: a restart or a failover, not a lasting outage


def database_unavailable() -> HttpResponse:
    """The answer of every machine-facing door (the API, /mcp) while the database is down."""
    return problem_response(
        503, detail="The database is unavailable; retry later.", headers={"Retry-After": str(DATABASE_RETRY_AFTER)}
    )
