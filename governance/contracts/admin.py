"""The contract catalog in the admin: versions are never edited in place (an edit stores the next
version); checks and statistics are read-only."""

from __future__ import annotations

from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html

from governance.contracts import services as contracts
from governance.contracts.forms import ContractMarkdownForm
from governance.contracts.models import Contract, ContractCheck, ContractDailyStat, ContractField, ContractViolationStat
from governance.kernel.access import signed_in
from governance.kernel.admin import KnownValuesFilter, ReadOnlyAdmin, ReadOnlyTabular, UnboundedList


class ContractFieldInline(ReadOnlyTabular):
    """The rows of one version, as stored: read-only, since a version never changes."""

    model = ContractField
    fields = ["position", "path_text", "type_text", "kind", "constraints", "required", "condition", "effect"]
    readonly_fields = fields
    can_delete = False


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
        saved, status = contracts.save_contract(form.cleaned_data["markdown"], actor=signed_in(request))
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


class ContractNameFilter(KnownValuesFilter):
    """The contracts of the catalog, not the distinct names of millions of checks."""

    title = "contract"
    parameter_name = "contract_name"

    def values(self) -> list[str]:
        return list(Contract.objects.order_by("name").values_list("name", flat=True).distinct())


@admin.register(ContractCheck)
class ContractCheckAdmin(UnboundedList, ReadOnlyAdmin):
    list_display = ["checked_at", "contract_name", "contract_version", "agent", "source", "compliant", "submitted_by"]
    # A date filter rather than a date hierarchy, whose year and month links read every row's date.
    list_filter = ["compliant", "source", ContractNameFilter, "checked_at"]
    search_fields = ["contract_name", "agent__agent_id", "output_sha256"]
    list_select_related = ["contract", "agent"]

    @admin.display(description="Version", ordering="contract__version")
    def contract_version(self, obj: ContractCheck) -> int:
        return obj.contract.version


@admin.register(ContractDailyStat)
class ContractDailyStatAdmin(UnboundedList, ReadOnlyAdmin):
    list_display = ["day", "contract_name", "agent_label", "checks", "compliant", "violations"]
    list_filter = [ContractNameFilter, "day"]
    search_fields = ["contract_name", "agent_label"]


@admin.register(ContractViolationStat)
class ContractViolationStatAdmin(UnboundedList, ReadOnlyAdmin):
    list_display = ["day", "contract_name", "path", "code", "count"]
    list_filter = ["code", ContractNameFilter, "day"]
    search_fields = ["contract_name", "path"]
