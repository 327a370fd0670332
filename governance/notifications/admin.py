"""Admin of notifications: rules are kept by operators (saved through the audited service,
disabled rather than deleted), deliveries are read only.

The signing secret of a signed webhook is derived, never stored: it is shown on the rule's page
to those who may change the rule (they configure the receiver with it), never to viewers.
"""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from governance.kernel.access import signed_in
from governance.kernel.admin import NoDelete, ReadOnlyAdmin
from governance.notifications import services
from governance.notifications.messages import masked
from governance.notifications.models import Channel, Delivery, EventKind, NotificationRule


def _domains() -> list[tuple[str, str]]:
    """The agents' domains, read from the agent model the rule points at (no import upwards)."""
    agent_model = cast("type[models.Model]", NotificationRule._meta.get_field("agent").related_model)
    domain = cast("models.Field", agent_model._meta.get_field("domain"))
    return [("", "Every domain"), *(domain.choices or [])]


# What viewers see instead: no secret, and a webhook target as scheme and host.
VIEWER_FIELDS = {"signing": None, "target": "target_shown"}


class NotificationRuleForm(forms.ModelForm):
    events = forms.TypedMultipleChoiceField(choices=EventKind.choices, widget=forms.CheckboxSelectMultiple)
    domain = forms.ChoiceField(choices=_domains, required=False)

    class Meta:
        model = NotificationRule
        fields = [
            "name",
            "enabled",
            "events",
            "agent",
            "domain",
            "channel",
            "target",
            "internal",
            "digest_seconds",
            "threshold_percent",
            "window_checks",
        ]


def _for_viewers(fields: Any) -> list[Any]:
    return [VIEWER_FIELDS.get(f, f) for f in fields if VIEWER_FIELDS.get(f, f)]


@admin.register(NotificationRule)
class NotificationRuleAdmin(NoDelete, admin.ModelAdmin):
    form = NotificationRuleForm
    list_display = [
        "name",
        "enabled",
        "channel",
        "target_shown",
        "event_list",
        "agent",
        "domain",
        "digest_seconds",
        "created_by",
    ]
    list_filter = ["enabled", "channel"]
    search_fields = ["name", "agent__agent_id"]
    autocomplete_fields = ["agent"]
    readonly_fields = ["signing", "target_shown", "created_at", "created_by", "updated_at"]
    actions = ["rotate_secret", "disable"]
    fieldsets = [
        (None, {"fields": ["name", "enabled", "events"]}),
        ("Scope", {"fields": ["agent", "domain"]}),
        ("Where", {"fields": ["channel", "target", "internal", "signing"]}),
        ("When", {"fields": ["digest_seconds"]}),
        ("Contract compliance", {"fields": ["threshold_percent", "window_checks"]}),
        ("History", {"fields": ["created_at", "created_by", "updated_at"]}),
    ]

    def get_fieldsets(self, request: HttpRequest, obj: NotificationRule | None = None) -> list[Any]:
        """The signing secret and the whole target only for those who may change the rule, never
        for viewers."""
        fieldsets = list(super().get_fieldsets(request, obj))
        if self.has_change_permission(request, obj):
            return fieldsets
        return [(name, {"fields": _for_viewers(options["fields"])}) for name, options in fieldsets]

    @admin.display(description="Target")
    def target_shown(self, obj: NotificationRule) -> str:
        return masked(obj.target)

    @admin.display(description="Events")
    def event_list(self, obj: NotificationRule) -> str:
        return ", ".join(EventKind(event).label for event in obj.events)

    @admin.display(description="Signing")
    def signing(self, obj: NotificationRule) -> str:
        if obj.pk is None or obj.channel != Channel.SIGNED_WEBHOOK:
            return "—"
        return format_html(
            "secret <code>{}</code><br>"
            'signed as <a href="https://www.standardwebhooks.com/">Standard Webhooks</a> says: headers '
            "<code>webhook-id</code>, <code>webhook-timestamp</code> and <code>webhook-signature</code> "
            "(any Standard Webhooks library verifies with this secret as it is)",
            services.signing_secret(obj),
        )

    def save_model(self, request: HttpRequest, obj: NotificationRule, form: forms.ModelForm, change: bool) -> None:
        services.save_rule(obj, actor=signed_in(request), changed=list(form.changed_data))

    @admin.action(description="Rotate the signing secret", permissions=["change"])
    def rotate_secret(self, request: HttpRequest, queryset: QuerySet[NotificationRule]) -> None:
        actor = signed_in(request)
        rotated = [services.rotate_secret(rule, actor=actor).name for rule in queryset.filter(channel="signed_webhook")]
        self.message_user(request, f"New secret for: {', '.join(rotated) or 'no signed webhook selected'}.")

    @admin.action(description="Disable the selected rules", permissions=["change"])
    def disable(self, request: HttpRequest, queryset: QuerySet[NotificationRule]) -> None:
        actor = signed_in(request)
        for rule in queryset.filter(enabled=True):
            rule.enabled = False
            services.save_rule(rule, actor=actor, changed=["enabled"])
        self.message_user(request, "Disabled.", messages.SUCCESS)


@admin.register(Delivery)
class DeliveryAdmin(ReadOnlyAdmin):
    list_display = [
        "created_at",
        "event",
        "rule",
        "channel",
        "status",
        "attempts",
        "finished_at",
        "last_status",
        "last_category",
    ]
    list_filter = ["status", "event", "channel"]
    list_select_related = ["rule"]
    search_fields = ["rule__name"]
    date_hierarchy = "created_at"
    fields = readonly_fields = (
        "rule",
        "event",
        "channel",
        "target_shown",
        "status",
        "attempts",
        "last_status",
        "last_category",
        "created_at",
        "next_attempt_at",
        "finished_at",
        "payload",
    )

    @admin.display(description="Target")
    def target_shown(self, obj: Delivery) -> str:
        return masked(obj.target)
