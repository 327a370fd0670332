"""Operator pages for agent memory: its health at a glance, the learnings to browse and search,
and one learning's whole story.

Views only gather: every read is a helper of ``memory.reports``, which keeps the query count of
each page fixed whatever the size of the memory. Reading memory needs ``memory.view_learning``
(every operator role holds it); deciding promotions happens in the reviewer inbox.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required, permission_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from governance.kernel.access import signed_in
from governance.kernel.exceptions import Unavailable
from governance.kernel.views import render_page
from memory import reports, search
from memory.forms import LearningFilterForm
from memory.models import Learning

view_learnings = permission_required("memory.view_learning", raise_exception=True)
LEARNINGS_PER_PAGE = 50
SEMANTIC_HITS = 20


@login_required
@view_learnings
def memory_overview(request: HttpRequest) -> HttpResponse:
    return render(request, "memory/overview.html", reports.health())


@login_required
@view_learnings
def learning_detail(request: HttpRequest, learning_id: int) -> HttpResponse:
    learning = get_object_or_404(Learning, pk=learning_id)
    context = {"learning": learning, **reports.learning_history(learning)}
    return render(request, "memory/learning_detail.html", context)


@login_required
@view_learnings
def learning_list(request: HttpRequest) -> HttpResponse:
    """Browse by scope, domain and minimum score; search by words (in the text) or by meaning,
    through the API's own search (``memory.search.search_memory``): its nearest learnings, the
    other filters applied to them, nearest first."""
    form = LearningFilterForm(request.GET)
    filters = form.values()
    q, mode = filters.pop("q", None), filters.pop("mode", "text")
    semantic, problem = bool(q) and mode == "semantic", None
    if semantic:
        try:
            hits = search.search_memory(signed_in(request), q=q, k=SEMANTIC_HITS, domain=filters.get("domain"))
        except Unavailable as exc:
            hits, problem = [], str(exc)
        rows = reports.browse_learnings(similarity={hit["id"]: hit["score"] for hit in hits}, **filters)
    else:
        rows = reports.browse_learnings(text=q, **filters)
    page = Paginator(rows, LEARNINGS_PER_PAGE).get_page(request.GET.get("page"))
    context = {"form": form, "page": page, "learnings": page.object_list, "semantic": semantic, "problem": problem}
    return render_page(request, "memory/learning_list.html", "memory/partials/learning_rows.html", context)
