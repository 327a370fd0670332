"""Operator pages for agent memory."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


@login_required
def memory_overview(request: HttpRequest) -> HttpResponse:
    return render(request, "memory/overview.html")
