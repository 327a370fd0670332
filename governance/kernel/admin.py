"""The read-only admin every app's system-written records use, and the admin of the kernel's own
records: API keys (the secret is shown once, at creation), the audit trail and task runs."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.paginator import Paginator
from django.db.models import ForeignKey, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from governance.kernel import registry
from governance.kernel.access import signed_in
from governance.kernel.models import ApiKey, AuditEvent, RetentionRun, TaskRun
from governance.kernel.pagination import EstimatedCountPaginator
from governance.kernel.services import issue_api_key, revoke_api_key


class NoDelete:
    """Kept for the audit trail: archived or revoked, never deleted by hand."""

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnly(NoDelete):
    """Written by services only: viewable, never added, changed or deleted by hand."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnlyAdmin(ReadOnly, admin.ModelAdmin):
    pass


class UnboundedList:
    """The changelist of a table that grows without bound (checks, sessions, messages, calls):
    no ``COUNT(*)`` of the table or of the filtered list per page (bench/scale.py: seconds at ten
    million rows), the page numbers from the planner's estimate instead."""

    paginator: type[Paginator] = EstimatedCountPaginator
    show_full_result_count: bool = False


class KnownValuesFilter(admin.SimpleListFilter):
    """A filter on a column of a big table whose values are known elsewhere (a small table, a
    constant): Django's default filter lists them with ``SELECT DISTINCT`` over the whole table on
    every page. ``parameter_name`` is the column, so the filtered URLs stay the same."""

    def values(self) -> list[str]:
        raise NotImplementedError

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [(value, value) for value in self.values()]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        return queryset.filter(**{str(self.parameter_name): value}) if value else queryset


class ReadOnlyTabular(ReadOnly, admin.TabularInline):
    extra = 0


class ReadOnlyStacked(ReadOnly, admin.StackedInline):
    extra = 0


class ApiKeyAddForm(forms.ModelForm):
    class Meta:
        model = ApiKey
        fields = ["name", "agent", "user"]

    def clean(self) -> dict:
        data = super().clean()
        if bool(data.get("agent")) == bool(data.get("user")):
            raise forms.ValidationError("Choose either an agent or a user: a key is bound to exactly one of them.")
        return data


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "kind",
        "owner",
        "prefix",
        "created_at",
        "created_by",
        "minted_by",
        "last_used_at",
        "revoked_at",
    ]
    list_filter = ["kind", ("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["name", "prefix", "agent__agent_id", "user__username"]
    readonly_fields = [
        "kind",
        "agent",
        "user",
        "prefix",
        "created_at",
        "created_by",
        "minted_by",
        "last_used_at",
        "revoked_at",
        "revoked_by",
    ]
    actions = ["revoke"]

    def formfield_for_foreignkey(self, db_field: ForeignKey, request: HttpRequest, **kwargs: Any) -> Any:
        """An operator key acts as its user: a person mints one only for themselves (the list
        offers no one else, and another user's id posted anyway is refused); a superuser mints
        for anyone, and the key records them as its minter (``issue_api_key``)."""
        if db_field.name == "user" and not request.user.is_superuser:
            kwargs["queryset"] = get_user_model().objects.filter(pk=cast(AbstractBaseUser, request.user).pk)
            kwargs["help_text"] = "Your own key only: another user's key comes from them or a superuser."
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_form(self, request: HttpRequest, obj: ApiKey | None = None, **kwargs: object):
        if obj is None:
            kwargs["form"] = ApiKeyAddForm
        return super().get_form(request, obj, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> list[str]:
        return self.readonly_fields if obj is not None else []

    def get_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> list[str]:
        return ["name", *self.readonly_fields] if obj is not None else ["name", "agent", "user"]

    @admin.display(description="Owner")
    def owner(self, obj: ApiKey) -> str:
        return obj.owner_label

    def save_model(self, request: HttpRequest, obj: ApiKey, form: forms.ModelForm, change: bool) -> None:
        if change:
            obj.save(update_fields=["name"])
            return
        created, plain = issue_api_key(actor=signed_in(request), name=obj.name, agent=obj.agent, user=obj.user)
        obj.pk, obj.prefix, obj.kind = created.pk, created.prefix, created.kind
        messages.warning(request, f"Copy this key now; it will not be shown again: {plain}")

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False  # revoke instead: the audit trail keeps naming the key

    @admin.action(description="Revoke selected keys", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        actor = signed_in(request)
        for api_key in queryset:
            revoke_api_key(api_key, actor=actor)
        self.message_user(request, f"Revoked {queryset.count()} key(s).", messages.SUCCESS)


# The page of an audit row's target, by target type (``app_label.model``): a URL name taking the
# target's id. The app that owns the page fills it, so the kernel links up without importing it.
TARGET_PAGES = registry.keyed("audit_target_pages", "the page of an audit row's target: a URL name, by target type")


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ["at", "actor", "action", "target_type", "target"]
    list_filter = ["action", "target_type"]
    search_fields = ["actor", "target_id"]
    date_hierarchy = "at"

    @admin.display(description="target", ordering="target_id")
    def target(self, event: AuditEvent) -> str:
        """The target's id, linked to its page when it has one (an inbox item's own page)."""
        page = TARGET_PAGES.find(event.target_type)
        if page is None or not event.target_id.isdigit():
            return event.target_id
        return format_html('<a href="{}">{}</a>', reverse(page, args=[int(event.target_id)]), event.target_id)


@admin.register(TaskRun)
class TaskRunAdmin(ReadOnlyAdmin):
    list_display = ["task_name", "status", "started_at", "finished_at", "duration_seconds", "worker"]
    list_filter = ["task_name", "status"]
    date_hierarchy = "started_at"


@admin.register(RetentionRun)
class RetentionRunAdmin(ReadOnlyAdmin):
    list_display = ["started_at", "finished_at", "actor", "rows"]
    date_hierarchy = "started_at"
