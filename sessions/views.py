"""Operator pages for AI sessions."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


@login_required
def session_list(request: HttpRequest) -> HttpResponse:
    return render(request, "sessions/session_list.html")
