"""The GET filter form every list page uses: a bad value is ignored, never an error page."""

from __future__ import annotations

from typing import Any

from django import forms

ANY = ("", "Any")


class FilterForm(forms.Form):
    """A filter form bound to request.GET; ``values()`` are the fields that validated."""

    def values(self) -> dict[str, Any]:
        self.is_valid()
        return {name: value for name, value in self.cleaned_data.items() if value not in ("", None)}
