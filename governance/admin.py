"""Admin for keys, the audit trail, task runs, review items and the contract catalog. Secrets are
never displayed; contract versions are never edited in place (an edit stores the next version)."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html

from governance import contracts
from governance.contract_forms import ContractMarkdownForm
from governance.models import (
    ApiKey,
    AuditEvent,
    Contract,
    ContractCheck,
    ContractDailyStat,
    ContractField,
    ContractViolationStat,
    ReviewItem,
    TaskRun,
)
from governance.principals import Principal
from governance.services import issue_api_key, revoke_api_key


class ReadOnlyAdmin(admin.ModelAdmin):
    """Records written by the system: viewable, never edited by hand."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


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
    list_display = ["name", "kind", "owner", "prefix", "created_at", "created_by", "last_used_at", "revoked_at"]
    list_filter = ["kind", ("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["name", "prefix", "agent__agent_id", "user__username"]
    readonly_fields = [
        "kind",
        "agent",
        "user",
        "prefix",
        "created_at",
        "created_by",
        "last_used_at",
        "revoked_at",
        "revoked_by",
    ]
    actions = ["revoke"]

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
        created, plain = issue_api_key(
            actor=Principal(user=request.user), name=obj.name, agent=obj.agent, user=obj.user
        )
        obj.pk, obj.prefix, obj.kind = created.pk, created.prefix, created.kind
        messages.warning(request, f"Copy this key now; it will not be shown again: {plain}")

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False  # revoke instead: the audit trail keeps naming the key

    @admin.action(description="Revoke selected keys", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        actor = Principal(user=request.user)
        for api_key in queryset:
            revoke_api_key(api_key, actor=actor)
        self.message_user(request, f"Revoked {queryset.count()} key(s).", messages.SUCCESS)


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ["at", "actor", "action", "target_type", "target_id"]
    list_filter = ["action", "target_type"]
    search_fields = ["actor", "target_id"]
    date_hierarchy = "at"


@admin.register(TaskRun)
class TaskRunAdmin(ReadOnlyAdmin):
    list_display = ["task_name", "status", "started_at", "finished_at", "duration_seconds", "worker"]
    list_filter = ["task_name", "status"]
    date_hierarchy = "started_at"


@admin.register(ReviewItem)
class ReviewItemAdmin(ReadOnlyAdmin):
    list_display = ["title", "kind", "status", "agent", "created_at", "expires_at"]
    list_filter = ["status", "kind"]


class ContractFieldInline(admin.TabularInline):
    """The rows of one version, as stored: read-only, since a version never changes."""

    model = ContractField
    fields = ["position", "path_text", "type_text", "kind", "constraints", "required", "condition", "effect"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Contract)
class ContractAdmin(admin.ModelAdmin):
    """Versions of the catalog. The change form edits the contract as catalog Markdown; saving goes
    through ``contracts.save_contract``, so an edit stores the next version (with its audit row)
    and the version on screen keeps its rows, which audit records point to."""

    form = ContractMarkdownForm
    list_display = ["name", "version", "section", "module", "is_current", "created_at", "created_by"]
    list_filter = ["section", "is_current"]
    search_fields = ["name", "module"]
    readonly_fields = [
        "name",
        "version",
        "section",
        "module",
        "is_current",
        "created_at",
        "created_by",
        "content_sha256",
    ]
    inlines = [ContractFieldInline]

    def get_fieldsets(self, request: HttpRequest, obj: Contract | None = None) -> list:
        return [(None, {"fields": self.readonly_fields}), ("Edit as Markdown", {"fields": ["markdown"]})]

    @admin.display(description="As Markdown")
    def markdown(self, obj: Contract) -> str:
        """What readers without the change permission see in place of the textarea."""
        return format_html("<pre>{}</pre>", contracts.render(obj))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # contracts come from a catalog: manage.py import_contracts

    def has_change_permission(self, request: HttpRequest, obj: Contract | None = None) -> bool:
        """Only the current version is edited (into the next one); older ones are read as they were."""
        if obj is not None and not obj.is_current:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False  # audit records point to their version

    def save_model(self, request: HttpRequest, obj: Contract, form: ContractMarkdownForm, change: bool) -> None:
        saved, status = contracts.save_contract(form.cleaned_data["markdown"], actor=Principal(user=request.user))
        obj.saved_version = (saved, status)

    def save_related(self, request: HttpRequest, form: ContractMarkdownForm, formsets: list, change: bool) -> None:
        """Nothing: the version on screen and its rows stay as they are."""

    def construct_change_message(
        self, request: HttpRequest, form: ContractMarkdownForm, formsets: list, add: bool = False
    ) -> list[dict]:
        """The admin's history says which version the edit made (the rows' formsets saved nothing)."""
        saved, status = form.instance.saved_version
        return [{"changed": {"fields": [f"markdown ({status}: version {saved.version})"]}}]

    def response_change(self, request: HttpRequest, obj: Contract) -> HttpResponse:
        saved, status = obj.saved_version
        if status == "unchanged":
            self.message_user(
                request, f"Nothing to save: the Markdown says what version {saved.version} says.", messages.INFO
            )
        else:
            self.message_user(
                request,
                f"Saved {saved.name} as version {saved.version}; version {obj.version} is kept as it was.",
                messages.SUCCESS,
            )
        return HttpResponseRedirect(reverse("admin:governance_contract_change", args=[saved.pk]))


@admin.register(ContractCheck)
class ContractCheckAdmin(ReadOnlyAdmin):
    list_display = ["checked_at", "contract_name", "contract_version", "agent", "source", "compliant", "submitted_by"]
    list_filter = ["compliant", "source", "contract_name"]
    search_fields = ["contract_name", "agent__agent_id", "output_sha256"]
    date_hierarchy = "checked_at"
    list_select_related = ["contract", "agent"]
    show_full_result_count = False  # the audit grows without bound: no second COUNT(*) per page

    @admin.display(description="Version", ordering="contract__version")
    def contract_version(self, obj: ContractCheck) -> int:
        return obj.contract.version


@admin.register(ContractDailyStat)
class ContractDailyStatAdmin(ReadOnlyAdmin):
    list_display = ["day", "contract_name", "agent_label", "checks", "compliant", "violations"]
    list_filter = ["contract_name"]
    search_fields = ["contract_name", "agent_label"]
    date_hierarchy = "day"


@admin.register(ContractViolationStat)
class ContractViolationStatAdmin(ReadOnlyAdmin):
    list_display = ["day", "contract_name", "path", "code", "count"]
    list_filter = ["code", "contract_name"]
    search_fields = ["contract_name", "path"]
    date_hierarchy = "day"
