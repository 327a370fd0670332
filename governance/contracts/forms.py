"""Forms of the contract pages and admin.

GET filters never make an error page: a bad value is ignored (and said so) and the default
applies. The spec-audit form turns pasted text into JSON, with the parser's own words when it is
not. The Markdown form of the admin reads one contract in the catalog's language and checks its
rows the way ``contracts.save_contract`` will, so every mistake comes back as a form error
instead of a server error.
"""

from __future__ import annotations

import json
from datetime import date
from typing import Any

from django import forms

from governance.contracts import catalog as contract_catalog
from governance.contracts import reports as contract_reports
from governance.contracts import rules as contract_rules
from governance.contracts import services as contracts
from governance.contracts.models import Contract

OLDEST_SINCE = date(2000, 1, 1)  # older dates are typos (and overflow time zone arithmetic)
MAX_SPEC_CHARS = 200_000  # a prompt's schema or example answer; more is not a prompt
ANY = ("", "Any section")


class CatalogFilterForm(forms.Form):
    q = forms.CharField(
        required=False,
        max_length=100,
        label="Search",
        widget=forms.SearchInput(attrs={"placeholder": "Name or module", "autocomplete": "off"}),
    )
    section = forms.ChoiceField(required=False)

    def __init__(self, *args: Any, sections: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["section"].choices = [ANY, *((s, s) for s in sections)]

    def values(self) -> dict[str, str]:
        """The filters that validated; an unknown section or an over-long search is ignored."""
        self.is_valid()
        return {name: self.cleaned_data.get(name) or "" for name in ("q", "section")}


class SinceForm(forms.Form):
    since = forms.DateField(
        required=False,
        input_formats=["%Y-%m-%d"],
        label="Since",
        widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
    )

    def clean_since(self) -> date | None:
        since = self.cleaned_data["since"]
        if since is not None and since < OLDEST_SINCE:
            raise forms.ValidationError(f"Reports start on {OLDEST_SINCE.isoformat()} at the earliest.")
        return since

    def first_day(self) -> date:
        """The asked-for first day, or the default window's when none or a bad one was asked."""
        if self.is_valid() and self.cleaned_data["since"]:
            return self.cleaned_data["since"]
        return contract_reports.default_since()


class SpecAuditForm(forms.Form):
    document = forms.CharField(
        label="JSON Schema or example answer",
        max_length=MAX_SPEC_CHARS,
        widget=forms.Textarea(attrs={"rows": 10, "spellcheck": "false", "class": "code"}),
        error_messages={"required": "Paste a JSON Schema or an example JSON answer first."},
    )
    version = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)

    def clean_document(self) -> Any:
        text = self.cleaned_data["document"]
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(
                f"This is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}."
            ) from exc


class ContractMarkdownForm(forms.ModelForm):
    """The change form of a contract: one textarea holding the contract as catalog Markdown."""

    markdown = forms.CharField(
        label="Edit as Markdown",
        widget=forms.Textarea(attrs={"rows": 24, "cols": 120, "spellcheck": "false", "class": "code"}),
        help_text=(
            "The contract in the catalog's own format (section heading, contract heading, four-column table, "
            "notes). Saving stores a new version when something changed; this version stays as it is."
        ),
    )

    class Meta:
        model = Contract
        fields: list[str] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """The textarea starts as the version on screen, rendered per form (never on the shared
        field class, which concurrent requests for other contracts would see)."""
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            self.initial.setdefault("markdown", contracts.render(self.instance))

    def clean_markdown(self) -> contract_catalog.ContractDoc:
        text = self.cleaned_data["markdown"]
        try:
            docs = contract_catalog.parse(text)
        except contract_catalog.CatalogError as exc:
            raise forms.ValidationError(f"The Markdown is not a contract: {exc}.") from exc
        if len(docs) != 1:
            raise forms.ValidationError(f"Write exactly one contract here; this text holds {len(docs)}.")
        (doc,) = docs
        if doc.name != self.instance.name:
            raise forms.ValidationError(
                f"The contract heading names {doc.name!r}; this page edits {self.instance.name!r}. "
                "Renaming is not an edit: import the new contract instead."
            )
        if not doc.section:
            raise forms.ValidationError("Keep the section heading (## ...) above the contract heading.")
        errors = []
        for row in doc.rows:
            try:
                contract_rules.rule_from_row(row.path, row.type, row.required, row.effect)
            except contract_rules.RowError as exc:
                errors.append(forms.ValidationError(f"Row {row.position + 1} ({row.path}): {exc}"))
        if errors:
            raise forms.ValidationError(errors)
        return doc
