"""Admin of AI sessions. Sessions and their messages are written by the event processor only, so
they are read-only here; an automation's schedule (on/off, interval or cron, trigger) and hosting profile,
the provider profiles and the prompt chunks are what operators tune by hand. Nothing is
deletable: sessions are the record of what agents did, and automations, profiles and chunks are
switched off rather than removed.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import Q
from django.http import HttpRequest

from governance.kernel.access import signed_in
from governance.kernel.admin import NoDelete, ReadOnly, UnboundedList
from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import InvalidInput
from governance.kernel.services import record
from sessions import automations as automation_actions
from sessions import profiles
from sessions.models import AISession, Automation, PromptChunk, ProviderCall, ProviderProfile, SessionMessage

MESSAGE_PREVIEW_CHARS = 120


def preview(message: SessionMessage) -> str:
    """A line of what the message says, whichever variant it is."""
    if message.sender == SessionMessage.Sender.SYSTEM:
        text = (message.system_message or {}).get("summary") or ""
    elif message.ai_message:
        text = message.ai_message.get("preText") or ""
    else:
        text = (message.rich_content or {}).get("linearText") or message.text_content or ""
    return text if len(text) <= MESSAGE_PREVIEW_CHARS else text[: MESSAGE_PREVIEW_CHARS - 1] + "…"


class MessageInline(ReadOnly, admin.TabularInline):
    model = SessionMessage
    extra = 0
    fields = readonly_fields = [
        "seq",
        "timestamp",
        "sender",
        "system_type",
        "text",
        "exclude_from_prompt",
        "fallback_kind",
        "removed_at",
    ]
    ordering = ["seq"]
    show_change_link = True

    @admin.display(description="Text")
    def text(self, obj: SessionMessage) -> str:
        return preview(obj)


class ProviderCallInline(ReadOnly, admin.TabularInline):
    """The hosted model calls of the session: what was asked of the provider, and how often."""

    model = ProviderCall
    extra = 0
    fields = readonly_fields = [
        "turn",
        "profile",
        "status",
        "attempts",
        "started_at",
        "finished_at",
        "tokens",
        "metadata",
        "error",
    ]
    ordering = ["turn"]


@admin.register(AISession)
class AISessionAdmin(UnboundedList, ReadOnly, admin.ModelAdmin):
    list_display = [
        "name",
        "agent",
        "type",
        "phase",
        "is_active",
        "end_reason",
        "total_roundtrips",
        "created_at",
    ]
    # A date filter rather than a date hierarchy, whose year and month links read every row's date.
    list_filter = ["type", "phase", "is_active", "end_reason", "created_at"]
    list_select_related = ["agent"]
    search_fields = ["name", "agent__agent_id", "session_id"]
    inlines = [MessageInline, ProviderCallInline]


@admin.register(SessionMessage)
class SessionMessageAdmin(UnboundedList, ReadOnly, admin.ModelAdmin):
    list_display = ["session", "seq", "sender", "system_type", "timestamp", "exclude_from_prompt", "removed_at"]
    list_filter = ["sender", "system_type", "exclude_from_prompt"]
    list_select_related = ["session"]
    search_fields = ["session__name", "session__session_id"]


class AutomationForm(forms.ModelForm):
    cron = forms.CharField(
        required=False,
        max_length=100,
        help_text="Instead of an interval: minute hour day-of-month month day-of-week, e.g. 0 9 * * 1-5 "
        "(server time zone). Leave the interval empty to use it.",
    )

    class Meta:
        model = Automation
        fields = ["enabled", "trigger", "interval_minutes", "cron", "profile"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Operators host on any enabled profile but a scripted one (server-side only); the
        current profile stays selectable so the schedule can be edited without touching it."""
        super().__init__(*args, **kwargs)
        usable = Q(enabled=True) & ~Q(provider=ProviderProfile.Provider.SCRIPTED)
        if self.instance.profile_id:
            usable |= Q(pk=self.instance.profile_id)
        self.fields["profile"].queryset = ProviderProfile.objects.filter(usable)
        self.initial.setdefault("cron", self.instance.cron if self.instance.pk else None)

    def clean_cron(self) -> str | None:
        return self.cleaned_data["cron"].strip() or None

    def clean(self) -> dict[str, Any]:
        """The API's schedule rule (sessions/automations.check_schedule), its errors on the fields."""
        data = super().clean()
        try:
            automation_actions.check_schedule(data.get("trigger", ""), data.get("interval_minutes"), data.get("cron"))
        except InvalidInput as exc:
            for problem in exc.errors:
                field = "cron" if problem["loc"][-1] == "cron" else "interval_minutes"
                self.add_error(field, problem["msg"])
        return data


@admin.register(Automation)
class AutomationAdmin(NoDelete, admin.ModelAdmin):
    """Created through the API (they need a SEED session); here switched, rescheduled and hosted
    on a provider profile, through the same service as the API."""

    form = AutomationForm
    list_display = ["name", "agent", "trigger", "schedule", "enabled", "next_run_at", "profile"]
    list_filter = ["enabled", "trigger"]
    list_select_related = ["agent", "profile", "crontab"]
    search_fields = ["name", "agent__agent_id"]
    fields = [
        "name",
        "agent",
        "seed_session",
        "enabled",
        "trigger",
        "interval_minutes",
        "cron",
        "event",
        "event_filter",
        "next_run_at",
        "profile",
        "created_at",
        "created_by",
    ]
    readonly_fields = [
        *("name", "agent", "seed_session", "event", "event_filter", "next_run_at", "created_at", "created_by"),
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: Automation, form: forms.ModelForm, change: bool) -> None:
        """sessions/automations.py computes the next run, audits and wakes the scheduler."""
        changes = {name: form.cleaned_data.get(name) for name in form.changed_data}
        saved = automation_actions.change_automation(obj.pk, actor=signed_in(request), **changes)
        obj.next_run_at = saved.next_run_at


class ProviderProfileForm(forms.ModelForm):
    class Meta:
        model = ProviderProfile
        fields = ["name", "provider", "model", "base_url", "secret_name", "internal", "options", "enabled"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Scripted profiles are made by the server only: not offered here, and a server-made one
        can only be switched on or off."""
        super().__init__(*args, **kwargs)
        if self.instance.provider == ProviderProfile.Provider.SCRIPTED:
            for name, field in self.fields.items():
                field.disabled = name != "enabled"
        else:
            self.fields["provider"].choices = [
                choice for choice in self.fields["provider"].choices if choice[0] != ProviderProfile.Provider.SCRIPTED
            ]
        if self.instance.pk:
            self.fields["name"].disabled = True  # automations name it


@admin.register(ProviderProfile)
class ProviderProfileAdmin(NoDelete, admin.ModelAdmin):
    """Where hosted automations send prompts and which secret goes along. The secret's value is
    never shown: only whether the named variable is currently set. Switch a profile off rather
    than delete it: automations keep naming it."""

    form = ProviderProfileForm
    list_display = ["name", "provider", "model", "destination", "secret_name", "secret", "internal", "enabled"]
    list_filter = ["provider", "internal", "enabled"]
    search_fields = ["name", "model", "base_url", "secret_name"]
    readonly_fields = ["secret", "created_by", "created_at"]

    def get_fields(self, request: HttpRequest, obj: ProviderProfile | None = None) -> list[str]:
        return [
            *ProviderProfileForm.Meta.fields[:5],
            "secret",
            *ProviderProfileForm.Meta.fields[5:],
            "created_by",
            "created_at",
        ]

    @admin.display(description="Calls go to")
    def destination(self, obj: ProviderProfile) -> str:
        return obj.effective_base_url or "(nowhere: scripted)"

    @admin.display(description="Secret")
    def secret(self, obj: ProviderProfile) -> str:
        return obj.secret_status or "none named"

    def save_model(self, request: HttpRequest, obj: ProviderProfile, form: forms.ModelForm, change: bool) -> None:
        """Through sessions/profiles.py: checked (the base URL through the outbound guard) and audited."""
        actor = signed_in(request)
        if change:
            changes = {name: form.cleaned_data[name] for name in form.changed_data if name in profiles.CHANGEABLE}
            saved = profiles.change_profile(obj.pk, actor=actor, **changes)
        else:
            fields = {name: form.cleaned_data[name] for name in ProviderProfileForm.Meta.fields}
            saved = profiles.create_profile(actor=actor, **fields)
        obj.pk = saved.pk


@admin.register(PromptChunk)
class PromptChunkAdmin(NoDelete, admin.ModelAdmin):
    list_display = ["title", "key", "importance", "enabled", "session_types"]
    list_filter = ["enabled"]
    search_fields = ["key", "title", "body"]

    def save_model(self, request: HttpRequest, obj: PromptChunk, form: forms.ModelForm, change: bool) -> None:
        """Chunks reach every model call: who changed which is kept in the audit trail."""
        super().save_model(request, obj, form, change)
        record(
            actor=signed_in(request),
            action=AuditAction.PROMPT_CHUNK_CHANGED if change else AuditAction.PROMPT_CHUNK_ADDED,
            target=obj,
            fields=list(form.changed_data),
        )
