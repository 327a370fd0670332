"""Operators register upstream MCP servers here; the credential is a variable's name only, and a
stdio server's command one of those the deployment allows, picked by name. The call log is written
by the gateway and only read here."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from gateway import services
from gateway.forms import REFUSALS
from gateway.models import GatewayCall, ToolPin, UpstreamServer, stdio_commands
from governance.kernel.access import signed_in
from governance.kernel.admin import KnownValuesFilter, NoDelete, ReadOnlyAdmin, UnboundedList


class UpstreamServerForm(forms.ModelForm):
    """A stdio command is chosen among the deployment's, never typed."""

    command = forms.ChoiceField(
        required=False,
        help_text="stdio: one of the commands this deployment allows (GATEWAY_STDIO_COMMANDS); it runs in the workers",
    )

    class Meta:
        model = UpstreamServer
        fields = ["name", "transport", "url", "internal", "command", "secret_name", "result_secrets", "enabled"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        command = self.fields["command"]
        assert isinstance(command, forms.ChoiceField)
        command.choices = [("", "---------"), *((name, name) for name in sorted(stdio_commands()))]


@admin.register(UpstreamServer)
class UpstreamServerAdmin(NoDelete, admin.ModelAdmin):
    """Kept while calls point at it: an operator disables a server rather than deleting it."""

    form = UpstreamServerForm
    list_display = ["name", "transport", "address", "internal", "secret_name", "secret", "enabled", "created_at"]
    list_filter = ["enabled", "transport", "internal", "result_secrets"]
    search_fields = ["name", "url", "command"]
    fields = [
        "name",
        "transport",
        "url",
        "internal",
        "command",
        "secret_name",
        "secret",
        "result_secrets",
        "enabled",
        "disabled_reason",
    ]
    readonly_fields = ["secret", "disabled_reason"]

    @admin.display(description="Credential")
    def secret(self, obj: UpstreamServer) -> str:
        return obj.secret_status or "none named"

    def save_model(self, request: HttpRequest, obj: UpstreamServer, form: forms.ModelForm, change: bool) -> None:
        services.save_upstream(obj, actor=signed_in(request), changed=list(form.changed_data))


class RefusalFilter(KnownValuesFilter):
    """The refusals the gateway gives (the call log page offers the same), not the distinct
    values of a million calls."""

    title = "refusal"
    parameter_name = "refusal"

    def values(self) -> list[str]:
        return list(REFUSALS)


@admin.register(GatewayCall)
class GatewayCallAdmin(UnboundedList, ReadOnlyAdmin):
    list_display = ["called_at", "agent", "tool_id", "outcome", "refusal", "latency_ms", "error_class", "secrets_found"]
    # A date filter rather than a date hierarchy, whose year and month links read every row's date.
    list_filter = ["outcome", RefusalFilter, "server", "called_at"]
    search_fields = ["tool_id", "agent__agent_id", "arguments_hash"]
    list_select_related = ["agent"]
    raw_id_fields = ["job", "session", "tool_call", "contract_check"]


@admin.register(ToolPin)
class ToolPinAdmin(ReadOnlyAdmin):
    """Every definition of an upstream tool the gateway has seen, and what became of it. Written
    by the lock and by reviewers' decisions in the inbox (gateway/pins.py), only read here."""

    list_display = ["server", "tool", "change", "status", "short_digest", "approved_by", "approved_at", "seen_at"]
    list_filter = ["status", "change", "server"]
    search_fields = ["tool", "sha256", "server__name"]
    list_select_related = ["server"]
    raw_id_fields = ["previous", "review_item"]

    @admin.display(description="SHA-256")
    def short_digest(self, obj: ToolPin) -> str:
        return obj.sha256[:12] or "(removed)"
