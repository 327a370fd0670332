"""Admin of AI sessions. Sessions and their messages are written by the event processor only, so
they are read-only here; an automation's schedule (on/off, interval, trigger) and the prompt
chunks are what operators tune by hand. Nothing is deletable: sessions are the record of what
agents did, and automations and chunks are switched off rather than removed.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django import forms
from django.contrib import admin
from django.db import transaction
from django.http import HttpRequest
from django.utils import timezone

from governance.principals import Principal
from governance.services import record
from sessions.models import AISession, Automation, PromptChunk, SessionMessage
from sessions.processor import enqueue

MESSAGE_PREVIEW_CHARS = 120


class NoDelete:
    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnly(NoDelete):
    """Written by services only: viewable, never added or changed by hand."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


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


@admin.register(AISession)
class AISessionAdmin(ReadOnly, admin.ModelAdmin):
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
    list_filter = ["type", "phase", "is_active", "end_reason"]
    list_select_related = ["agent"]
    search_fields = ["name", "agent__agent_id", "session_id"]
    date_hierarchy = "created_at"
    inlines = [MessageInline]


@admin.register(SessionMessage)
class SessionMessageAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ["session", "seq", "sender", "system_type", "timestamp", "exclude_from_prompt", "removed_at"]
    list_filter = ["sender", "system_type", "exclude_from_prompt"]
    list_select_related = ["session"]
    search_fields = ["session__name", "session__session_id"]


class AutomationForm(forms.ModelForm):
    class Meta:
        model = Automation
        fields = ["enabled", "trigger", "interval_minutes"]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("trigger") == Automation.Trigger.SCHEDULED and not data.get("interval_minutes"):
            raise forms.ValidationError("A SCHEDULED automation needs an interval.")
        return data


@admin.register(Automation)
class AutomationAdmin(NoDelete, admin.ModelAdmin):
    """Created through the API (they need a SEED session); here only switched and rescheduled."""

    form = AutomationForm
    list_display = ["name", "agent", "trigger", "interval_minutes", "enabled", "next_run_at", "provider"]
    list_filter = ["enabled", "trigger"]
    list_select_related = ["agent"]
    search_fields = ["name", "agent__agent_id"]
    fields = [
        "name",
        "agent",
        "seed_session",
        "enabled",
        "trigger",
        "interval_minutes",
        "next_run_at",
        "provider",
        "provider_config",
        "created_at",
        "created_by",
    ]
    readonly_fields = [
        "name",
        "agent",
        "seed_session",
        "next_run_at",
        "provider",
        "provider_config",
        "created_at",
        "created_by",
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: Automation, form: forms.ModelForm, change: bool) -> None:
        """A schedule switched on needs a next run, or the scheduler would never pick it up."""
        if obj.trigger == Automation.Trigger.SCHEDULED and obj.enabled and obj.next_run_at is None:
            obj.next_run_at = timezone.now() + timedelta(minutes=obj.interval_minutes or 60)
        super().save_model(request, obj, form, change)
        record(
            actor=Principal(user=request.user),
            action="automation.changed",
            target=obj,
            fields={name: str(form.cleaned_data.get(name)) for name in form.changed_data},
        )
        # Enabled, disabled or rescheduled: the scheduler looks at the agent's slot now (seed section 6).
        agent_id = obj.agent_id
        transaction.on_commit(lambda: enqueue("sessions.tick_agent", agent_id))


@admin.register(PromptChunk)
class PromptChunkAdmin(NoDelete, admin.ModelAdmin):
    list_display = ["title", "key", "importance", "enabled", "session_types"]
    list_filter = ["enabled"]
    search_fields = ["key", "title", "body"]

    def save_model(self, request: HttpRequest, obj: PromptChunk, form: forms.ModelForm, change: bool) -> None:
        """Chunks reach every model call: who changed which is kept in the audit trail."""
        super().save_model(request, obj, form, change)
        record(
            actor=Principal(user=request.user),
            action="prompt_chunk.changed" if change else "prompt_chunk.added",
            target=obj,
            fields=list(form.changed_data),
        )
