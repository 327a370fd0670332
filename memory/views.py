"""Operator pages for agent memory: its health at a glance, and one learning's whole story.

Views only gather: every read is a helper of ``memory.overview``, which keeps the query count of
each page fixed whatever the size of the memory. Reading memory needs ``memory.view_learning``
(every operator role holds it); deciding promotions happens in the reviewer inbox.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required, permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from memory import overview
from memory.models import Learning

view_learnings = permission_required("memory.view_learning", raise_exception=True)


@login_required
@view_learnings
def memory_overview(request: HttpRequest) -> HttpResponse:
    return render(request, "memory/overview.html", overview.health())


@login_required
@view_learnings
def learning_detail(request: HttpRequest, learning_id: int) -> HttpResponse:
    learning = get_object_or_404(Learning, pk=learning_id)
    context = {"learning": learning, **overview.learning_history(learning)}
    return render(request, "memory/learning_detail.html", context)
