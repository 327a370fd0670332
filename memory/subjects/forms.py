"""Forms of the subject pages: the search box, and the correction of one fact.

A corrected fact must still be a fact the seed's documents can hold, or the next export would
write a document its own import refuses. So each fact form checks the edited fact, merged with
what the operator did not touch, against the same pydantic schema the import uses, on top of the
column sizes of the table; every problem comes back as a field error, never as a server error.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django import forms
from django.db.models import Model
from pydantic import BaseModel, ValidationError

from memory.models import EventSentiment, Preference, PreferenceSentiment, Relationship
from memory.subjects import documents as docs
from memory.subjects.services import FACT_KINDS


class SubjectSearchForm(forms.Form):
    q = forms.CharField(
        required=False,
        max_length=100,
        label="Search",
        widget=forms.SearchInput(attrs={"placeholder": "Key or name", "autocomplete": "off"}),
    )

    def query(self) -> str:
        """The search that validated; an over-long one is ignored rather than an error page."""
        return self.cleaned_data["q"].strip() if self.is_valid() else ""


def _max(model: type[Model], field: str) -> int:
    return model._meta.get_field(field).max_length


class TopicsField(forms.CharField):
    """A list of short names typed as "travail, stress"."""

    def prepare_value(self, value: Any) -> Any:
        return ", ".join(value) if isinstance(value, list) else value

    def to_python(self, value: Any) -> list[str]:
        text = super().to_python(value)
        return [part.strip() for part in text.split(",") if part.strip()]


def _unit(label: str) -> forms.FloatField:
    return forms.FloatField(
        label=label, min_value=0.0, max_value=1.0, widget=forms.NumberInput(attrs={"step": "0.01", "min": 0, "max": 1})
    )


class FactForm(forms.Form):
    """The editable values of one fact (its id, source and timestamp are provenance, not edited)."""

    schema: ClassVar[type[BaseModel]]

    def __init__(self, *args: Any, fact: Model, kind: str, **kwargs: Any) -> None:
        self.fact, self.kind = fact, kind
        self.fact_id = getattr(fact, FACT_KINDS[kind][1])
        kwargs.setdefault("auto_id", f"id_{self.fact_id}_%s")  # two rows in edit mode keep distinct ids
        super().__init__(*args, initial={name: getattr(fact, name) for name in self.field_names()}, **kwargs)

    @classmethod
    def field_names(cls) -> list[str]:
        return list(cls.base_fields)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if self.errors:
            return cleaned
        merged = {name: getattr(self.fact, name) for name in self.schema.model_fields if name != "id"}
        merged |= {name: cleaned[name] for name in self.field_names()}
        try:
            self.schema.model_validate({**merged, "id": self.fact_id})
        except ValidationError as exc:
            for error in exc.errors():
                name = error["loc"][0] if error["loc"] else None
                self.add_error(name if name in self.fields else None, error["msg"])
        return cleaned

    def changes(self) -> dict[str, Any]:
        """Only the values that differ: the audit row then names the fields really corrected."""
        return {name: value for name, value in self.cleaned_data.items() if getattr(self.fact, name) != value}


class PreferenceForm(FactForm):
    schema = docs.PreferenceIn
    category = forms.CharField(max_length=_max(Preference, "category"))
    item = forms.CharField(max_length=_max(Preference, "item"))
    sentiment = forms.ChoiceField(choices=PreferenceSentiment.choices)
    confidence = _unit("Confidence")
    context = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))


class EventForm(FactForm):
    schema = docs.EventIn
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}))
    importance = _unit("Importance")
    sentiment = forms.ChoiceField(choices=EventSentiment.choices)
    related_topics = TopicsField(required=False, label="Related topics", help_text="Separated by commas.")


class RelationshipForm(FactForm):
    schema = docs.RelationshipIn
    entity_1 = forms.CharField(label="Entity", max_length=_max(Relationship, "entity_1"))
    relation_type = forms.CharField(label="Relation", max_length=_max(Relationship, "relation_type"))
    entity_2 = forms.CharField(label="Other entity", max_length=_max(Relationship, "entity_2"))
    confidence = _unit("Confidence")


FORMS: dict[str, type[FactForm]] = {"preference": PreferenceForm, "event": EventForm, "relationship": RelationshipForm}
