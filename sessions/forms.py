"""The sessions list's GET filter (a bad value is ignored, never an error page)."""

from __future__ import annotations

from django import forms

from governance.kernel.forms import ANY, FilterForm
from sessions.machine import Phase, SessionType


class SessionFilterForm(FilterForm):
    type = forms.ChoiceField(required=False, choices=[ANY, *((t.value, t.value.title()) for t in SessionType)])
    phase = forms.ChoiceField(required=False, choices=[ANY, *((p.value, p.value) for p in Phase)])
    active = forms.TypedChoiceField(
        required=False,
        choices=[ANY, ("yes", "Active"), ("no", "Not active")],
        coerce=lambda value: value == "yes",
        empty_value=None,
    )
