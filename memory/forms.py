"""The GET filters of the learnings page: a bad value is ignored, never an error page."""

from __future__ import annotations

from django import forms

from governance.kernel.forms import ANY, FilterForm
from memory.models import Learning

MODES = [("text", "Words"), ("semantic", "Meaning")]


class LearningFilterForm(FilterForm):
    q = forms.CharField(
        required=False, max_length=1000, label="Search", widget=forms.TextInput(attrs={"type": "search"})
    )
    mode = forms.ChoiceField(required=False, choices=MODES, label="Match")
    scope = forms.ChoiceField(required=False, choices=[ANY, *Learning.Scope.choices])
    domain = forms.CharField(required=False, max_length=100)
    min_score = forms.DecimalField(required=False, min_value=0, max_digits=10, decimal_places=4, label="Min. score")
