"""GET filters of the gateway pages: a bad value is ignored (FilterForm), never an error page."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from django import forms
from django.db.models import Exists, OuterRef

from agents.models import Agent
from gateway.models import GatewayCall, UpstreamServer
from gateway.reports import start_of
from governance.kernel.forms import ANY, FilterForm

OLDEST_DAY = date(2000, 1, 1)  # older dates are typos (and overflow time zone arithmetic)
REFUSALS = (
    "RateLimited",
    "Forbidden",
    "Conflict",
    "PendingApproval",
    "NotFound",
    "InvalidInput",
    "SecretInResult",
    "DefinitionChanged",
)
WINDOWS = (1, 7, 30, 90)
DEFAULT_WINDOW = 7


def _day_field(label: str) -> forms.DateField:
    return forms.DateField(
        required=False,
        label=label,
        input_formats=["%Y-%m-%d"],
        widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
    )


class CallFilterForm(FilterForm):
    """The call log's filters. Agents to choose from are those with calls (an index probe each);
    tools and refusals are typed, with the usual refusals offered by the page's datalist."""

    agent = forms.ModelChoiceField(required=False, queryset=Agent.objects.none(), to_field_name="agent_id")
    tool = forms.CharField(
        required=False,
        max_length=200,
        widget=forms.SearchInput(attrs={"placeholder": "mcp__server__tool", "autocomplete": "off"}),
    )
    server = forms.ModelChoiceField(required=False, queryset=UpstreamServer.objects.none(), to_field_name="name")
    outcome = forms.ChoiceField(required=False, choices=[ANY, *GatewayCall.Outcome.choices])
    refusal = forms.CharField(
        required=False, max_length=50, widget=forms.TextInput(attrs={"list": "refusals", "autocomplete": "off"})
    )
    since = _day_field("Since")
    until = _day_field("Until")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        agent = self.fields["agent"]
        assert isinstance(agent, forms.ModelChoiceField)
        agent.queryset = (
            Agent.objects.filter(Exists(GatewayCall.objects.filter(agent=OuterRef("pk"))))
            .only("pk", "agent_id")
            .order_by("agent_id")
        )
        agent.empty_label = "Any"
        server = self.fields["server"]
        assert isinstance(server, forms.ModelChoiceField)
        server.queryset = UpstreamServer.objects.only("pk", "name")
        server.empty_label = "Any"

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for name in ("since", "until"):
            day = data.get(name)
            if day is not None and day < OLDEST_DAY:
                self.add_error(name, f"Dates start on {OLDEST_DAY.isoformat()} at the earliest.")
        return data

    def values(self) -> dict[str, Any]:
        """The queryset's ``filtered`` arguments: days become instants, ``until`` included."""
        found = super().values()
        if "since" in found:
            found["since"] = start_of(found["since"])
        if "until" in found:
            found["before"] = start_of(found.pop("until") + timedelta(days=1))
        return found


class WindowForm(forms.Form):
    window = forms.TypedChoiceField(
        coerce=int, label="Window", choices=[(days, f"{days} day{'s' if days > 1 else ''}") for days in WINDOWS]
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["window"].initial = DEFAULT_WINDOW

    def days(self) -> int:
        """The chosen window, or the default one when none or a bad one was asked for."""
        return self.cleaned_data["window"] if self.is_valid() else DEFAULT_WINDOW
