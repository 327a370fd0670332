"""The health indicator of the top bar and the page it links to (issue 17.3).

Every page asks for the indicator in a request of its own (htmx, on load), so that no page waits
for the checks, fails with them or counts their queries. The indicator reads the kernel's health
report through a short cache, so a burst of page views probes the broker once. The page itself is
always fresh, and adds what only the project package may import: the embedding backlog of every
memory kind.
"""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from governance.kernel import health
from memory import indexing

logger = logging.getLogger(__name__)

CACHE_KEY = "health-indicator"
CACHE_SECONDS = 15  # long enough that a burst of page views probes once, short enough to follow an outage

LABELS = {"ok": "Healthy", "degraded": "Degraded", "down": "Down", "unknown": "Health unknown"}


def level(report: dict[str, Any]) -> str:
    """Down when the database or pgvector fails (nothing works); degraded when only the broker or
    the heartbeat does (pages work, background work does not); ok otherwise."""
    if report["status"] != "ok":
        return "down"
    if report["broker"] != "ok" or report["heartbeat"]["status"] != "ok":
        return "degraded"
    return "ok"


def indicator() -> dict[str, str]:
    """The top bar's level and label, cached; any failure reads "unknown" and never breaks a page."""
    try:
        current = cache.get(CACHE_KEY)
        if current is None:
            current = level(health.report())
            cache.set(CACHE_KEY, current, CACHE_SECONDS)
    except Exception as exc:
        logger.warning("[health] the indicator could not be computed: %s", exc.__class__.__name__)
        current = "unknown"
    return {"level": current, "label": LABELS[current]}


def embedding_backlog() -> list[dict[str, Any]]:
    """Rows per memory kind still waiting for a vector of the configured model."""
    from memory.embeddings import get_backend

    model = get_backend().model
    return [{"kind": kind, "waiting": indexing.backlog(kind, model)} for kind in indexing.MODELS]


@login_required
def indicator_view(request: HttpRequest) -> HttpResponse:
    return render(request, "partials/health_indicator.html", indicator())


@login_required
def health_view(request: HttpRequest) -> HttpResponse:
    report = health.report()
    current = level(report)
    cache.set(CACHE_KEY, current, CACHE_SECONDS)
    context = {
        "report": report,
        "level": current,
        "label": LABELS[current],
        "backlog": embedding_backlog() if report["database"] == "ok" else None,
    }
    return render(request, "controlplane/health.html", context)
