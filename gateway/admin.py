"""Operators register upstream MCP servers here; the credential is a variable's name only. The
call log is written by the gateway and only read here."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from gateway import services
from gateway.forms import REFUSALS
from gateway.models import GatewayCall, UpstreamServer
from governance.kernel.admin import KnownValuesFilter, NoDelete, ReadOnlyAdmin, UnboundedList
from governance.kernel.principals import Principal


@admin.register(UpstreamServer)
class UpstreamServerAdmin(NoDelete, admin.ModelAdmin):
    """Kept while calls point at it: an operator disables a server rather than deleting it."""

    list_display = ["name", "transport", "address", "secret_name", "secret", "enabled", "created_at"]
    list_filter = ["enabled", "transport"]
    search_fields = ["name", "url", "command"]
    fields = ["name", "transport", "url", "command", "secret_name", "secret", "enabled"]
    readonly_fields = ["secret"]

    @admin.display(description="Credential")
    def secret(self, obj: UpstreamServer) -> str:
        return obj.secret_status or "none named"

    def save_model(self, request: HttpRequest, obj: UpstreamServer, form: forms.ModelForm, change: bool) -> None:
        services.save_upstream(obj, actor=Principal(user=request.user), changed=list(form.changed_data))


class RefusalFilter(KnownValuesFilter):
    """The refusals the gateway gives (the call log page offers the same), not the distinct
    values of a million calls."""

    title = "refusal"
    parameter_name = "refusal"

    def values(self) -> list[str]:
        return list(REFUSALS)


@admin.register(GatewayCall)
class GatewayCallAdmin(UnboundedList, ReadOnlyAdmin):
    list_display = ["called_at", "agent", "tool_id", "outcome", "refusal", "latency_ms", "error_class"]
    # A date filter rather than a date hierarchy, whose year and month links read every row's date.
    list_filter = ["outcome", RefusalFilter, "server", "called_at"]
    search_fields = ["tool_id", "agent__agent_id", "arguments_hash"]
    list_select_related = ["agent"]
    raw_id_fields = ["job", "session", "tool_call", "contract_check"]
