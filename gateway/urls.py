"""The gateway's operator pages (mounted at /gateway/; the MCP endpoint itself is /mcp)."""

from django.urls import path

from gateway import pages

app_name = "gateway"

urlpatterns = [
    path("", pages.servers, name="servers"),
    path("calls/", pages.calls, name="calls"),
    path("calls.csv", pages.calls_csv, name="calls-csv"),
    path("tools/", pages.tools, name="tools"),
    path("agents/<str:agent_id>/", pages.agent, name="agent"),
]
