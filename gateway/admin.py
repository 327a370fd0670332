"""Operators register upstream MCP servers here; the credential is a variable's name only."""

from __future__ import annotations

from django.contrib import admin

from gateway.models import UpstreamServer


@admin.register(UpstreamServer)
class UpstreamServerAdmin(admin.ModelAdmin):
    list_display = ["name", "url", "secret_name", "enabled", "created_at"]
    list_filter = ["enabled"]
    search_fields = ["name", "url"]
