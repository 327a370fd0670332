"""Forms of the agents pages and admin: GET filters (never invalid for the page: a bad value is
ignored, not an error page), the manifest upload, the skill form, the named schema form and the job
trigger form. Roles,
domains, intents and entity types are offered from their registries (agents/registries.py), read
when the form is made, so a value an operator added is offered at once."""

from __future__ import annotations

from typing import Any, cast

import pydantic
import yaml
from django import forms
from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

from agents import named_schemas, registries
from agents.models import Agent, Job, JobTrigger, NamedSchema, Skill
from agents.models.registries import RegistryEntry
from agents.skills import SkillSpec, version_problem
from agents.vocabulary import Registry, label_problem
from governance.kernel.exceptions import InvalidInput
from governance.kernel.forms import ANY, FilterForm

KPI_STATUSES = [("critical", "Critical"), ("warning", "Warning"), ("ok", "OK"), ("no_data", "No data")]
MAX_MANIFEST_BYTES = 1024 * 1024


def _offer(field: forms.Field, choices: list[tuple[str, str]]) -> None:
    """Set a choice field's choices read when the form is made (a registry's values)."""
    cast(forms.ChoiceField, field).choices = choices


class AgentFilterForm(FilterForm):
    role = forms.ChoiceField(required=False)
    domain = forms.ChoiceField(required=False)
    owner = forms.ChoiceField(required=False)
    status = forms.ChoiceField(required=False, choices=[ANY, *KPI_STATUSES], label="KPI status")

    def __init__(self, *args: Any, owners: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        found = registries.listing([Registry.ROLES, Registry.DOMAINS])  # one query for both
        _offer(self.fields["role"], [ANY, *registries.choices(Registry.ROLES, entries=found[Registry.ROLES])])
        _offer(self.fields["domain"], [ANY, *registries.choices(Registry.DOMAINS, entries=found[Registry.DOMAINS])])
        # The rows show roles and domains by label: from the same read, not one more per page.
        self.labels = {registry.value: {e.value: e.label for e in entries} for registry, entries in found.items()}
        self.fields["owner"].choices = [ANY, *((owner, owner) for owner in owners)]


class JobFilterForm(FilterForm):
    status = forms.ChoiceField(required=False, choices=[ANY, *Job.Status.choices])
    intent = forms.ChoiceField(required=False)
    agent = forms.ModelChoiceField(required=False, queryset=Agent.objects.none(), to_field_name="agent_id")
    escalated = forms.TypedChoiceField(
        required=False,
        choices=[ANY, ("yes", "Yes"), ("no", "No")],
        coerce=lambda value: value == "yes",
        empty_value=None,
    )

    def __init__(self, *args: Any, agents: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _offer(self.fields["intent"], [ANY, *registries.choices(Registry.INTENTS)])
        self.fields["agent"].queryset = agents
        self.fields["agent"].empty_label = "Any"


def window_choices() -> list[tuple[int, str]]:
    days = sorted({7, 30, 90, settings.KPI_WINDOW_DAYS})
    return [(d, f"{d} days") for d in days]


class KpiWindowForm(forms.Form):
    window = forms.TypedChoiceField(coerce=int, label="Window")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["window"].choices = window_choices()
        self.fields["window"].initial = settings.KPI_WINDOW_DAYS

    def days(self) -> int:
        """The chosen window, or the configured default when none or a bad one was asked for."""
        return self.cleaned_data["window"] if self.is_valid() else settings.KPI_WINDOW_DAYS


class ManifestUploadForm(forms.Form):
    file = forms.FileField(required=False, help_text="A YAML or JSON manifest file.")
    text = forms.CharField(
        required=False,
        label="Or paste the manifest",
        widget=forms.Textarea(attrs={"rows": 24, "cols": 100, "spellcheck": "false"}),
    )

    def clean_file(self) -> UploadedFile | None:
        upload = self.cleaned_data.get("file")
        if upload is not None and upload.size > MAX_MANIFEST_BYTES:
            raise forms.ValidationError("A manifest is at most 1 MiB.")
        return upload

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        upload, text = data.get("file"), (data.get("text") or "").strip()
        if bool(upload) == bool(text):
            raise forms.ValidationError("Upload a file or paste the manifest (one of them).")
        if upload:
            try:
                text = upload.read().decode("utf-8")
            except UnicodeDecodeError as exc:
                raise forms.ValidationError("The file is not UTF-8 text.") from exc
        data["source"] = text
        return data


class ManifestDiffForm(forms.Form):
    """Two versions of one agent's manifest to compare."""

    agent = forms.CharField(widget=forms.HiddenInput)
    a = forms.ChoiceField(label="From version")
    b = forms.ChoiceField(label="To version")

    def __init__(self, *args: Any, versions: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in ("a", "b"):
            self.fields[name].choices = [(v, v) for v in versions]


class SkillForm(forms.ModelForm):
    """A skill edited in the admin: checked by the same rules as a catalog file (``SkillSpec``)
    and the registry's version rule, so the form says what the service would refuse."""

    tools = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 5, "cols": 60, "spellcheck": "false"}),
        help_text="The tool ids this skill calls, one per line; a manifest requiring the skill must grant each.",
    )

    class Meta:
        model = Skill
        fields = ["skill_id", "version", "description", "tools", "enabled"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.initial["tools"] = "\n".join(self.instance.tools or [])

    def clean_tools(self) -> list[str]:
        return [line.strip() for line in (self.cleaned_data.get("tools") or "").splitlines() if line.strip()]

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        if self.errors:
            return data
        try:
            fields = {k: data[k] for k in ("version", "description", "tools")}
            # On change the id is read-only (a skill's identity), so it is not in the form's data.
            spec = SkillSpec.model_validate({"skill_id": data.get("skill_id", self.instance.skill_id), **fields})
        except pydantic.ValidationError as exc:
            for err in exc.errors():
                self.add_error(str(err["loc"][0]) if err["loc"] else None, err["msg"])
            return data
        if self.instance.pk is not None:
            problem = version_problem(Skill.objects.get(pk=self.instance.pk), spec)
            if problem:
                self.add_error("version", problem)
        data["spec"] = spec
        return data


class JobTriggerForm(forms.ModelForm):
    """The admin's trigger form: the job's intent and entity type chosen among the registries'
    values (a retired one stays offered on the trigger that has it; ``save_trigger`` refuses it
    for a new trigger or a changed value)."""

    intent = forms.ChoiceField()
    entity_type = forms.ChoiceField(label="Entity type")

    class Meta:
        model = JobTrigger
        fields = [
            "name",
            "agent",
            "kind",
            "enabled",
            "description",
            "intent",
            "entity_type",
            "payload",
            "constraints",
            "priority",
            "crontab",
            "event",
            "event_filter",
        ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _offer(self.fields["intent"], registries.choices(Registry.INTENTS, self.instance.intent))
        _offer(self.fields["entity_type"], registries.choices(Registry.ENTITY_TYPES, self.instance.entity_type))


class NamedSchemaForm(forms.ModelForm):
    """A named schema in the admin: the definition is written as in a manifest's `schemas:` (one
    type expression, or `field: expression` lines) and checked by the service's own rules, so the
    form says what the service would refuse."""

    definition = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 8, "cols": 80, "spellcheck": "false"}),
        help_text="A type expression (z.array(z.string().url())), or one `field: type expression` per line.",
    )

    class Meta:
        model = NamedSchema
        fields = ["name", "label", "description", "definition"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        current = self.instance.definition
        if isinstance(current, dict):
            self.initial["definition"] = yaml.safe_dump(current, sort_keys=False, allow_unicode=True).strip()

    def clean_definition(self) -> str | dict[str, str]:
        text = self.cleaned_data.get("definition") or ""
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError:
            value = text.strip()  # a lone expression YAML cannot read as a scalar
        name = self.cleaned_data.get("name") or self.instance.name
        try:
            return named_schemas.valid_definition(name, value)
        except InvalidInput as exc:
            raise forms.ValidationError([e["msg"] for e in exc.errors]) from exc


class RegistryEntryForm(forms.ModelForm):
    """A registry value in the admin: the value's shape is the model's (a lowercase slug), the
    label's is the API's (``label_problem``), so the admin refuses what the service would."""

    class Meta:
        model = RegistryEntry
        fields = ["value", "label"]

    def clean_label(self) -> str:
        label = self.cleaned_data.get("label") or ""
        problem = label_problem(label)
        if problem:
            raise forms.ValidationError(problem[0].upper() + problem[1:] + ".")
        return label.strip()
