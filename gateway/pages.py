"""Operator pages of the MCP gateway (mounted at /gateway/; ``views.py`` is the /mcp endpoint).

The upstream servers need ``gateway.view_upstreamserver``; anything read from the call log (the
call counts on the servers page included) needs ``gateway.view_gatewaycall``, through
``GatewayCall.objects.visible_to``. Every Viewer holds both. Views only gather: figures come from
``gateway.reports``, upstream health from ``gateway.health``. An htmx request gets the partial it
swaps in; the same URL loaded in full renders the whole page, so pushed URLs stay shareable.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required, permission_required
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET

from agents.models import Agent
from gateway import health, pins, reports
from gateway.forms import REFUSALS, CallFilterForm, WindowForm
from gateway.models import GatewayCall, UpstreamServer
from gateway.querysets import GatewayCallQuerySet
from governance.kernel.access import signed_in
from governance.kernel.pagination import EstimatedCountPaginator
from governance.kernel.views import render_page

VIEW_CALLS = "gateway.view_gatewaycall"
CALLS_PER_PAGE = 50
RECENT_CALLS = 20

view_servers = permission_required("gateway.view_upstreamserver", raise_exception=True)
view_calls = permission_required(VIEW_CALLS, raise_exception=True)
view_agent_calls = permission_required([VIEW_CALLS, "agents.view_agent"], raise_exception=True)


def _calls(request: HttpRequest) -> GatewayCallQuerySet:
    return GatewayCall.objects.visible_to(signed_in(request))


def _locked(found: health.Health, states: list[pins.PinState]) -> dict[str, Any]:
    """A server's card's tools, each with its lock (gateway/pins.py), and the approved ones its
    listing lacks."""
    by_tool = {state.tool: state for state in states if state.state != "removed"}
    return {
        "tools": [(tool, by_tool.get(tool.name)) for tool in found.tools],
        "removed": [state for state in states if state.state == "removed"],
    }


@login_required
@view_servers
@require_GET
def servers(request: HttpRequest) -> HttpResponse:
    """Each upstream: its address, credential's name, health and tools, and its last day of calls."""
    found = list(UpstreamServer.objects.all())
    can_see_calls = request.user.has_perm(VIEW_CALLS)
    activity = reports.server_activity(_calls(request)) if can_see_calls else {}
    states = health.probe(found)
    locks = pins.boards({pk: state.listed for pk, state in states.items() if state.reachable})
    rows = [
        (
            server,
            states[server.pk],
            activity.get(server.pk, reports.Figures()),
            _locked(states[server.pk], locks.get(server.pk, [])),
        )
        for server in found
    ]
    context = {
        "rows": rows,
        "can_see_calls": can_see_calls,
        "hours": reports.ACTIVITY_HOURS,
        "timeout": health.PROBE_TIMEOUT,
    }
    return render_page(request, "gateway/servers.html", "gateway/partials/server_table.html", context)


@login_required
@view_agent_calls
@require_GET
def agent(request: HttpRequest, agent_id: str) -> HttpResponse:
    """One agent's way through the gateway: the upstream tools it is granted, its last calls."""
    principal = signed_in(request)
    found = get_object_or_404(
        Agent.objects.visible_to(principal).only("pk", "agent_id", "name", "active_manifest_id"), agent_id=agent_id
    )
    context = {
        "agent": found,
        "grants": reports.granted_tools(found),
        "calls": _calls(request).filter(agent=found).for_list()[:RECENT_CALLS],
        "recent": RECENT_CALLS,
    }
    return render(request, "gateway/agent.html", context)


@login_required
@view_calls
@require_GET
def calls(request: HttpRequest) -> HttpResponse:
    """The call log, newest first, filtered and paginated; the CSV link carries the same filters."""
    form = CallFilterForm(request.GET)
    found = _calls(request).for_list().filtered(**form.values())
    page = EstimatedCountPaginator(found, CALLS_PER_PAGE).get_page(request.GET.get("page"))
    context = {"form": form, "page": page, "calls": page.object_list, "refusals": REFUSALS}
    return render_page(request, "gateway/calls.html", "gateway/partials/call_rows.html", context)


@login_required
@view_calls
@require_GET
def calls_csv(request: HttpRequest) -> StreamingHttpResponse:
    """The filtered call log as CSV, newest first, streamed however long it is. Arguments are
    exported only where the gateway stored them."""
    form = CallFilterForm(request.GET)
    found = _calls(request).filtered(**form.values()).order_by("-called_at", "-id")
    return StreamingHttpResponse(
        reports.csv_lines(found),
        content_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": content_disposition_header(as_attachment=True, filename="gateway-calls.csv")},
    )


@login_required
@view_calls
@require_GET
def tools(request: HttpRequest) -> HttpResponse:
    """Calls, refusals, failures and latency per upstream tool over a window (7 days unless asked)."""
    form = WindowForm(request.GET or None)
    context = {"form": form, "report": reports.tool_report(_calls(request), form.days())}
    return render_page(request, "gateway/tools.html", "gateway/partials/tool_report.html", context)
