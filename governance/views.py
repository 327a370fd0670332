"""Operator pages of the governance app: the reviewer inbox and the contract catalog."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.defaults import page_not_found

from governance.models import ReviewItem
from governance.problems import problem_response


@login_required
def inbox(request: HttpRequest) -> HttpResponse:
    pending = ReviewItem.objects.filter(status=ReviewItem.Status.PENDING).select_related("agent")
    can_decide = request.user.has_perm("governance.decide_reviewitem")
    return render(request, "governance/inbox.html", {"pending": pending, "can_decide": can_decide})


@login_required
def contracts(request: HttpRequest) -> HttpResponse:
    return render(request, "governance/contracts.html")


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """API clients get problem+json for unknown paths too; people get the HTML page."""
    if request.path.startswith("/api/"):
        return problem_response(404, detail=f"No endpoint at {request.path}.")
    return page_not_found(request, exception)
