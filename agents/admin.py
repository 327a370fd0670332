"""Admin of the fleet: read-only records, manifest upload through the registry, version diffs,
the registries of domains, intents, entity types and roles, and the registry of named schemas.

Nothing here is deletable or editable by hand: manifests change only through
``agents.registry.load_manifest`` (validated, versioned, audited), jobs and escalations only
through their services, registry values only through ``agents.registries`` (added, relabelled,
retired by an action, never deleted), named schemas only through ``agents.named_schemas``, and
the platform archives rather than deletes.
"""

from __future__ import annotations

import difflib
from typing import Any

import yaml
from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from agents import named_schemas, registries, registry, skills, triggers
from agents.forms import (
    KPI_STATUSES,
    JobTriggerForm,
    ManifestDiffForm,
    ManifestUploadForm,
    NamedSchemaForm,
    RegistryEntryForm,
    SkillForm,
)
from agents.models import (
    Agent,
    AgentManifest,
    AgentRole,
    Domain,
    EntityType,
    Escalation,
    Intent,
    Job,
    JobArtifact,
    JobTrigger,
    KpiAlert,
    KpiSample,
    ManifestKpi,
    ManifestTool,
    NamedSchema,
    Skill,
    ToolCall,
)
from agents.models.registries import RegistryEntry
from agents.vocabulary import Registry
from governance.kernel.access import signed_in
from governance.kernel.admin import (
    KnownValuesFilter,
    NoDelete,
    ReadOnlyAdmin,
    ReadOnlyStacked,
    ReadOnlyTabular,
    UnboundedList,
)
from governance.kernel.exceptions import Conflict, Forbidden, InvalidInput


def manifest_yaml(manifest: AgentManifest) -> str:
    """The one text form of a manifest document, shared by the detail page and the diff."""
    return yaml.safe_dump(manifest.document, sort_keys=True, allow_unicode=True)


# Agents -----------------------------------------------------------------------------------------


class HasActiveManifestFilter(admin.SimpleListFilter):
    title = "active manifest"
    parameter_name = "has_manifest"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("yes", "Yes"), ("no", "No (may not run jobs)")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() in ("yes", "no"):
            return queryset.filter(active_manifest__isnull=self.value() == "no")
        return queryset


class KpiStatusFilter(admin.SimpleListFilter):
    """The status is a roll-up of samples, not a column: rate the whole fleet, filter by pk."""

    title = "worst KPI status"
    parameter_name = "kpi_status"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return KPI_STATUSES

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if not self.value():
            return queryset
        statuses = KpiSample.objects.worst_statuses(
            list(Agent.objects.only("pk", "active_manifest_id")), settings.KPI_WINDOW_DAYS
        )
        return queryset.filter(pk__in=[pk for pk, status in statuses.items() if status == self.value()])


class RegistryFilter(KnownValuesFilter):
    """A column that holds a registry's values: the registry lists them (retired ones too, since
    rows keep them), by label, instead of a ``SELECT DISTINCT`` over the table."""

    registry: Registry

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return registries.choices(self.registry)


class RoleFilter(RegistryFilter):
    title = "role"
    parameter_name = "role__exact"
    registry = Registry.ROLES


class DomainFilter(RegistryFilter):
    title = "domain"
    parameter_name = "domain__exact"
    registry = Registry.DOMAINS


class IntentFilter(RegistryFilter):
    title = "intent"
    parameter_name = "intent__exact"
    registry = Registry.INTENTS


class AgentChangeList(ChangeList):
    """Rates the agents of the page in two queries, instead of two per row."""

    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        agents = list(self.result_list)
        statuses = KpiSample.objects.worst_statuses(agents, settings.KPI_WINDOW_DAYS)
        for agent in agents:
            agent.kpi_status = statuses[agent.pk]


class ManifestVersionInline(ReadOnlyTabular):
    model = AgentManifest
    fk_name = "agent"
    fields = readonly_fields = ["version", "created_at", "created_by"]
    show_change_link = True
    verbose_name_plural = "manifest versions"


@admin.register(Agent)
class AgentAdmin(ReadOnlyAdmin):
    list_display = ["agent_id", "name", "role", "domain", "owner", "active_version", "worst_kpi_status"]
    list_filter = [RoleFilter, DomainFilter, "owner", HasActiveManifestFilter, KpiStatusFilter]
    list_select_related = ["active_manifest"]
    search_fields = ["agent_id", "name", "owner"]
    inlines = [ManifestVersionInline]

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return AgentChangeList

    @admin.display(description="Active version", ordering="active_manifest__version")
    def active_version(self, obj: Agent) -> str:
        return obj.active_manifest.version if obj.active_manifest_id else "—"

    @admin.display(description=f"Worst KPI status ({settings.KPI_WINDOW_DAYS} days)")
    def worst_kpi_status(self, obj: Agent) -> str:
        status = getattr(obj, "kpi_status", None)
        if status is None:  # the detail page, outside the change list
            status = KpiSample.objects.worst_statuses([obj], settings.KPI_WINDOW_DAYS)[obj.pk]
        return status.replace("_", " ")


# Skills -----------------------------------------------------------------------------------------


@admin.register(Skill)
class SkillAdmin(NoDelete, admin.ModelAdmin):
    """The skill registry. Saved through ``agents.skills.save_skill`` (versions only go up,
    audited); disabled rather than deleted, since manifests keep naming a skill."""

    form = SkillForm
    list_display = ["skill_id", "version", "tool_list", "enabled", "updated_at", "updated_by"]
    list_filter = ["enabled"]
    search_fields = ["skill_id", "description"]

    def get_readonly_fields(self, request: HttpRequest, obj: Skill | None = None) -> list[str]:
        return ["skill_id"] if obj is not None else []

    @admin.display(description="Tools")
    def tool_list(self, obj: Skill) -> str:
        return ", ".join(obj.tools) or "—"

    def save_model(self, request: HttpRequest, obj: Skill, form: forms.ModelForm, change: bool) -> None:
        spec = form.cleaned_data["spec"]
        skill, _ = skills.save_skill(spec, actor=signed_in(request), enabled=form.cleaned_data["enabled"])
        obj.pk = skill.pk  # the admin's log entry and redirect name the saved row


# Registries -------------------------------------------------------------------------------------


class RegistryEntryAdmin(NoDelete, admin.ModelAdmin):
    """One registry's values: added and relabelled through the form, retired by the action, never
    deleted. Every write goes through ``agents.registries`` (the API's and the command's service)
    with the signed-in operator as its actor; the value itself is read-only once added."""

    registry: Registry
    form = RegistryEntryForm
    list_display = ["value", "label", "active", "created_at", "created_by", "retired_at", "retired_by"]
    list_filter = [("retired_at", admin.EmptyFieldListFilter)]
    search_fields = ["value", "label"]
    actions = ["retire"]
    details = ["created_at", "created_by", "retired_at", "retired_by"]

    def get_fields(self, request: HttpRequest, obj: RegistryEntry | None = None) -> Any:
        return ["value", "label", *self.details] if obj is not None else ["value", "label"]

    def get_readonly_fields(self, request: HttpRequest, obj: RegistryEntry | None = None) -> list[str]:
        return ["value", *self.details] if obj is not None else []

    @admin.display(boolean=True, description="Active", ordering="retired_at")
    def active(self, obj: RegistryEntry) -> bool:
        return not obj.retired

    def save_model(self, request: HttpRequest, obj: RegistryEntry, form: forms.ModelForm, change: bool) -> None:
        actor = signed_in(request)
        if change:
            saved = registries.relabel_value(self.registry, obj.value, obj.label, actor=actor)
        else:
            saved, _ = registries.add_value(self.registry, obj.value, label=obj.label, actor=actor)
        obj.pk, obj.created_at, obj.created_by = saved.pk, saved.created_at, saved.created_by

    @admin.action(
        description="Retire the selected values (new use is refused; nothing is deleted)", permissions=["change"]
    )
    def retire(self, request: HttpRequest, queryset: QuerySet) -> None:
        actor = signed_in(request)
        retired = [registries.retire_value(self.registry, entry.value, actor=actor).value for entry in queryset]
        self.message_user(request, f"Retired: {', '.join(retired)}. What already uses them keeps them.")


@admin.register(Domain)
class DomainAdmin(RegistryEntryAdmin):
    registry = Registry.DOMAINS


@admin.register(Intent)
class IntentAdmin(RegistryEntryAdmin):
    registry = Registry.INTENTS


@admin.register(EntityType)
class EntityTypeAdmin(RegistryEntryAdmin):
    registry = Registry.ENTITY_TYPES


@admin.register(AgentRole)
class AgentRoleAdmin(RegistryEntryAdmin):
    registry = Registry.ROLES


@admin.register(NamedSchema)
class NamedSchemaAdmin(NoDelete, admin.ModelAdmin):
    """The registry of named schemas: added and edited through the form, retired by the action,
    never deleted. Every write goes through ``agents.named_schemas`` with the signed-in operator
    as its actor; an edit reaches the manifests loaded afterwards, never a version already stored."""

    form = NamedSchemaForm
    list_display = ["name", "label", "active", "created_at", "created_by", "retired_at", "retired_by"]
    list_filter = [("retired_at", admin.EmptyFieldListFilter)]
    search_fields = ["name", "label", "description"]
    actions = ["retire"]
    details = ["created_at", "created_by", "retired_at", "retired_by"]

    def get_fields(self, request: HttpRequest, obj: NamedSchema | None = None) -> Any:
        fields = ["name", "label", "description", "definition"]
        return [*fields, *self.details] if obj is not None else fields

    def get_readonly_fields(self, request: HttpRequest, obj: NamedSchema | None = None) -> list[str]:
        return ["name", *self.details] if obj is not None else []

    @admin.display(boolean=True, description="Active", ordering="retired_at")
    def active(self, obj: NamedSchema) -> bool:
        return not obj.retired

    def save_model(self, request: HttpRequest, obj: NamedSchema, form: forms.ModelForm, change: bool) -> None:
        saved, _ = named_schemas.save_schema(
            obj.name,
            form.cleaned_data["definition"],
            label=obj.label,
            description=obj.description,
            actor=signed_in(request),
        )
        obj.pk, obj.created_at, obj.created_by = saved.pk, saved.created_at, saved.created_by

    @admin.action(description="Retire the selected schemas (new manifests may not name them)", permissions=["change"])
    def retire(self, request: HttpRequest, queryset: QuerySet) -> None:
        actor = signed_in(request)
        retired = [named_schemas.retire_schema(entry.name, actor=actor).name for entry in queryset]
        self.message_user(request, f"Retired: {', '.join(retired)}. Stored manifest versions keep them.")


# Job triggers -----------------------------------------------------------------------------------


@admin.register(JobTrigger)
class JobTriggerAdmin(NoDelete, admin.ModelAdmin):
    """Cron, webhook and event triggers that create jobs for an agent. Saved through
    ``agents.triggers.save_trigger`` (audited); disabled rather than deleted."""

    form = JobTriggerForm
    list_display = ["name", "agent", "kind", "when", "intent", "priority", "enabled", "fired_count", "last_fired_at"]
    list_filter = ["kind", "enabled", "event", IntentFilter]
    list_select_related = ["agent", "crontab"]
    search_fields = ["name", "agent__agent_id", "description"]
    autocomplete_fields = ["agent"]
    readonly_fields = ["webhook", "next_run_at", "fired_count", "last_fired_at"]
    actions = ["rotate_secret"]
    fieldsets = [
        (None, {"fields": ["name", "agent", "kind", "enabled", "description"]}),
        ("The job it creates", {"fields": ["intent", "entity_type", "payload", "constraints", "priority"]}),
        ("Cron", {"fields": ["crontab", "next_run_at"]}),
        ("Webhook", {"fields": ["webhook"]}),
        ("Event", {"fields": ["event", "event_filter"]}),
        ("Firings", {"fields": ["fired_count", "last_fired_at"]}),
    ]

    def get_fieldsets(self, request: HttpRequest, obj: JobTrigger | None = None) -> list[Any]:
        """The webhook's secret only for those who may change the trigger, never for viewers."""
        fieldsets = list(super().get_fieldsets(request, obj))
        if self.has_change_permission(request, obj):
            return fieldsets
        return [(name, options) for name, options in fieldsets if name != "Webhook"]

    @admin.display(description="When")
    def when(self, obj: JobTrigger) -> str:
        if obj.kind == JobTrigger.Kind.CRON:
            return str(obj.crontab) if obj.crontab else "—"
        return obj.get_event_display() if obj.kind == JobTrigger.Kind.EVENT else "on delivery"

    @admin.display(description="Webhook address and secret")
    def webhook(self, obj: JobTrigger) -> str:
        """Shown to those who may change the trigger (the admin page itself needs that): the
        sender must be told the secret, which is derived, never stored."""
        if obj.pk is None or obj.kind != JobTrigger.Kind.WEBHOOK:
            return "—"
        return format_html(
            "<code>POST /api/v1/triggers/{}/webhook</code><br>secret <code>{}</code><br>"
            'signed as <a href="https://www.standardwebhooks.com/">Standard Webhooks</a> says: headers '
            "<code>webhook-id</code>, <code>webhook-timestamp</code> and <code>webhook-signature</code> "
            "(any Standard Webhooks library signs with this secret as it is)",
            obj.name,
            triggers.webhook_secret(obj),
        )

    def save_model(self, request: HttpRequest, obj: JobTrigger, form: forms.ModelForm, change: bool) -> None:
        triggers.save_trigger(obj, actor=signed_in(request), changed=list(form.changed_data))

    @admin.action(description="Rotate the webhook secret", permissions=["change"])
    def rotate_secret(self, request: HttpRequest, queryset: QuerySet) -> None:
        rotated = [triggers.rotate_secret(t, actor=signed_in(request)).name for t in queryset.filter(kind="webhook")]
        self.message_user(request, f"New secret for: {', '.join(rotated) or 'no webhook trigger selected'}.")


# Manifests --------------------------------------------------------------------------------------


class ManifestToolInline(ReadOnlyTabular):
    model = ManifestTool
    fields = readonly_fields = ["tool_id", "permission", "rate_limit", "requires_approval"]


class ManifestKpiInline(ReadOnlyTabular):
    model = ManifestKpi
    fields = readonly_fields = ["metric_id", "target", "threshold_warning", "threshold_critical", "unit", "direction"]


@admin.register(AgentManifest)
class AgentManifestAdmin(ReadOnlyAdmin):
    list_display = ["agent", "version", "is_active", "created_at", "created_by"]
    list_filter = ["agent"]
    list_select_related = ["agent"]
    search_fields = ["agent__agent_id", "version"]
    fields = ["agent", "version", "is_active", "created_at", "created_by", "content_hash", "pretty_document"]
    readonly_fields = fields
    inlines = [ManifestToolInline, ManifestKpiInline]
    change_list_template = "admin/agents/agentmanifest/change_list.html"
    change_form_template = "admin/agents/agentmanifest/change_form.html"

    @admin.display(boolean=True, description="Active")
    def is_active(self, obj: AgentManifest) -> bool:
        return obj.agent.active_manifest_id == obj.pk

    @admin.display(description="Document")
    def pretty_document(self, obj: AgentManifest) -> str:
        return format_html('<pre class="manifest-document">{}</pre>', manifest_yaml(obj))

    def get_urls(self) -> list[URLPattern]:
        own = [
            path("upload/", self.admin_site.admin_view(self.upload_view), name="agents_agentmanifest_upload"),
            path("diff/", self.admin_site.admin_view(self.diff_view), name="agents_agentmanifest_diff"),
        ]
        return own + super().get_urls()

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        extra_context = {**(extra_context or {}), "can_upload": request.user.has_perm("agents.change_agent")}
        return super().changelist_view(request, extra_context)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict | None = None
    ) -> HttpResponse:
        manifest = self.get_object(request, object_id)
        if manifest is not None:
            versions = list(manifest.agent.manifests.values_list("version", flat=True))
            others = [v for v in versions if v != manifest.version]
            extra_context = {
                **(extra_context or {}),
                "diff_form": ManifestDiffForm(
                    initial={"agent": manifest.agent.agent_id, "a": others[0] if others else "", "b": manifest.version},
                    versions=versions,
                ),
                "has_other_versions": bool(others),
            }
        return super().change_view(request, object_id, form_url, extra_context)

    def _page(self, request: HttpRequest, template: str, title: str, **context: Any) -> TemplateResponse:
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, "title": title, **context}
        return TemplateResponse(request, f"admin/agents/agentmanifest/{template}", context)

    def upload_view(self, request: HttpRequest) -> HttpResponse:
        """Validate, version and activate a manifest through the registry, as the API does."""
        if not request.user.has_perm("agents.change_agent"):
            raise PermissionDenied
        form = ManifestUploadForm(request.POST or None, request.FILES or None)
        problem, errors = "", []
        if request.method == "POST" and form.is_valid():
            try:
                manifest, created = registry.load_manifest(form.cleaned_data["source"], actor=signed_in(request))
            except InvalidInput as exc:
                problem, errors = exc.detail, [_error_row(error) for error in exc.errors]
            except (Conflict, Forbidden) as exc:
                problem = exc.detail
            else:
                outcome = "activated" if created else "unchanged (already active)"
                level = messages.SUCCESS if created else messages.INFO
                self.message_user(request, f"Manifest {manifest.agent.agent_id} {manifest.version} {outcome}.", level)
                return redirect(reverse("admin:agents_agentmanifest_change", args=[manifest.pk]))
        return self._page(request, "upload.html", "Upload manifest", form=form, problem=problem, errors=errors)

    def diff_view(self, request: HttpRequest) -> HttpResponse:
        """Unified diff of two versions' documents, as YAML with sorted keys."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        agent = get_object_or_404(Agent, agent_id=request.GET.get("agent", ""))
        manifests = {m.version: m for m in agent.manifests.all()}
        if not manifests:
            return self._page(request, "diff.html", f"Manifest versions of {agent.agent_id}", agent=agent)
        versions = list(manifests)  # newest first: compare the previous version with the newest by default
        previous = versions[1] if len(versions) > 1 else versions[0]
        data = {"agent": agent.agent_id, "a": request.GET.get("a", previous), "b": request.GET.get("b", versions[0])}
        form = ManifestDiffForm(data, versions=versions)
        diff: list[str] | None = None
        if form.is_valid():
            a, b = manifests[form.cleaned_data["a"]], manifests[form.cleaned_data["b"]]
            diff = list(
                difflib.unified_diff(
                    manifest_yaml(a).splitlines(),
                    manifest_yaml(b).splitlines(),
                    fromfile=f"{agent.agent_id} {a.version}",
                    tofile=f"{agent.agent_id} {b.version}",
                    lineterm="",
                )
            )
        title = f"Compare manifest versions of {agent.agent_id}"
        return self._page(request, "diff.html", title, agent=agent, form=form, diff=diff)


def _error_row(error: dict[str, Any]) -> dict[str, str]:
    """A validation error with its field path as an author reads it (`tools.0.rate_limit`)."""
    path = ".".join(str(part) for part in error["loc"][1:]) or "(document)"
    return {"path": path, "msg": error["msg"], "type": error["type"]}


# Jobs -------------------------------------------------------------------------------------------


class EscalatedFilter(admin.SimpleListFilter):
    title = "escalated"
    parameter_name = "escalated"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("yes", "Yes"), ("no", "No")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() in ("yes", "no"):
            return queryset.filtered(escalated=self.value() == "yes")
        return queryset


def steps_table(steps: list[dict[str, Any]]) -> str:
    """An escalation's steps as a table: when, what, who, and what else the step recorded."""
    rows = format_html_join(
        "",
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        (
            (
                step.get("at", ""),
                step.get("action", ""),
                step.get("by", ""),
                "; ".join(f"{k}: {v}" for k, v in sorted(step.items()) if k not in ("at", "action", "by")),
            )
            for step in steps
        ),
    )
    head = "<tr><th>When</th><th>Step</th><th>By</th><th>Detail</th></tr>"
    return format_html("<table><thead>{}</thead><tbody>{}</tbody></table>", mark_safe(head), rows)


class JobArtifactInline(ReadOnlyTabular):
    model = JobArtifact
    fields = readonly_fields = ["kind", "name", "content_type", "created_at", "download"]

    @admin.display(description="Download")
    def download(self, obj: JobArtifact) -> str:
        return format_html('<a href="{}">{}</a>', reverse("agents:job-artifact", args=[obj.job_id, obj.kind]), obj.name)


class EscalationInline(ReadOnlyStacked):
    model = Escalation
    fk_name = "job"
    fields = readonly_fields = [
        "status",
        "reason",
        "triggers",
        "target_agent",
        "human_required",
        "child_job",
        "deadline",
        "steps_list",
    ]

    @admin.display(description="Steps")
    def steps_list(self, obj: Escalation) -> str:
        return steps_table(obj.steps)


@admin.register(Job)
class JobAdmin(ReadOnlyAdmin):
    list_display = ["job_id", "agent", "intent", "status", "created_at", "attempts", "is_escalated"]
    list_filter = ["status", IntentFilter, "agent", EscalatedFilter]
    list_select_related = ["agent"]
    search_fields = ["agent__agent_id", "intent"]
    date_hierarchy = "created_at"
    inlines = [JobArtifactInline, EscalationInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).with_escalation_flag()

    @admin.display(boolean=True, description="Escalated", ordering="escalated")
    def is_escalated(self, obj: Job) -> bool:
        return obj.escalated


@admin.register(Escalation)
class EscalationAdmin(ReadOnlyAdmin):
    list_display = ["pk", "job", "status", "target_agent", "human_required", "deadline", "created_at"]
    list_filter = ["status", "human_required", "target_agent"]
    list_select_related = ["job", "target_agent"]
    date_hierarchy = "created_at"
    exclude = ["steps"]
    readonly_fields = ["steps_list"]

    @admin.display(description="Steps")
    def steps_list(self, obj: Escalation) -> str:
        return steps_table(obj.steps)


@admin.register(KpiAlert)
class KpiAlertAdmin(ReadOnlyAdmin):
    list_display = ["agent", "metric_id", "value", "threshold_critical", "opened_at", "resolved_at", "review_item"]
    list_filter = ["metric_id", ("resolved_at", admin.EmptyFieldListFilter)]
    list_select_related = ["agent", "review_item"]
    search_fields = ["agent__agent_id", "metric_id"]


@admin.register(KpiSample)
class KpiSampleAdmin(ReadOnlyAdmin):
    list_display = ["agent", "metric_id", "value", "reported", "recorded_at", "job"]
    list_filter = ["agent", "metric_id", "reported"]
    list_select_related = ["agent", "job"]
    date_hierarchy = "recorded_at"


class ManifestToolFilter(KnownValuesFilter):
    """The tools the manifests name, not the distinct tool ids of a million calls."""

    title = "tool"
    parameter_name = "tool_id"

    def values(self) -> list[str]:
        return list(ManifestTool.objects.order_by("tool_id").values_list("tool_id", flat=True).distinct())


@admin.register(ToolCall)
class ToolCallAdmin(UnboundedList, ReadOnlyAdmin):
    list_display = ["agent", "tool_id", "job", "called_at"]
    # A date filter rather than a date hierarchy, whose year and month links read every row's date.
    list_filter = ["agent", ManifestToolFilter, "called_at"]
    list_select_related = ["agent", "job"]
