"""Operator pages for the fleet."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from agents.models import Agent
from governance.principals import Principal


@login_required
def agent_list(request: HttpRequest) -> HttpResponse:
    agents = Agent.objects.visible_to(Principal(user=request.user))
    return render(request, "agents/agent_list.html", {"agents": agents})
