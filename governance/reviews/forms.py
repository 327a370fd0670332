"""Forms of the governance pages: the inbox's filters and a reviewer's decision on one inbox item.

The decision form checks the decision against what the item offers, so a crafted POST cannot answer a
question with something that was never one of its options, nor "answer" an escalation; and it
carries the hash of the content the reviewer was shown (``shown``), which the decision binds to.

An item whose kind takes edits (``ReviewKind.amend``: a tool call) may be approved with edited
``arguments``, JSON text parsed here and checked by the kind when deciding. The page sends the
editor's text with every button of the item, so only an approval reads it: a rejection with an
unfinished edit in the editor is a rejection.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.db.models import F, Q, QuerySet

from governance.kernel.forms import ANY, FilterForm
from governance.reviews import kinds
from governance.reviews.models import ReviewDecision, ReviewItem


class DecisionForm(forms.Form):
    decision = forms.ChoiceField(
        choices=[
            (ReviewDecision.Decision.APPROVE, "Approve"),
            (ReviewDecision.Decision.REJECT, "Reject"),
            (ReviewDecision.Decision.ANSWER, "Answer"),
        ]
    )
    answer = forms.CharField(required=False, max_length=2000, strip=False)
    comment = forms.CharField(required=False, max_length=2000)
    shown = forms.CharField(
        min_length=64,
        max_length=64,
        error_messages={"required": "This page is out of date: reload it and decide on what it shows."},
    )
    arguments = forms.CharField(required=False, max_length=1_000_000, strip=False, widget=forms.Textarea)

    def __init__(self, *args: Any, item: ReviewItem, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.item = item

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        decision, answer = data.get("decision"), data.get("answer") or ""
        kind, payload = self.item.review_kind, self.item.payload_dict
        if decision == ReviewDecision.Decision.ANSWER:
            if answer not in kind.answers(payload):
                raise forms.ValidationError("Choose one of the answers the request offers.")
        elif decision is not None:
            if decision == ReviewDecision.Decision.APPROVE and not kind.approvable(payload):
                raise forms.ValidationError("A question is answered, not approved.")
            data["answer"] = None
        edited = decision == ReviewDecision.Decision.APPROVE and "arguments" in self.data
        edited = edited and not self.has_error("arguments")  # too long: said once, by the field
        text = self.cleaned_data.get("arguments", "")
        self.cleaned_data["arguments"] = self._edited_arguments(text) if edited else None
        return data

    def _edited_arguments(self, text: str) -> Any:
        """The edited arguments, decoded; the kind checks what they are (``ReviewKind.amend``)."""
        if self.item.review_kind.amend is None:
            raise forms.ValidationError("This item is approved as it is: its arguments cannot be edited.")
        try:
            return json.loads(text)
        except RecursionError:
            raise forms.ValidationError("The edited arguments are nested too deeply.") from None
        except ValueError as exc:
            raise forms.ValidationError(f"The edited arguments are not JSON: {exc}.") from None


SORTS = {
    "oldest": ("Oldest first", ("created_at", "pk")),
    "newest": ("Newest first", ("-created_at", "-pk")),
    "deadline": ("Deadline first", (F("expires_at").asc(nulls_last=True), "created_at", "pk")),
}


class InboxFilterForm(FilterForm):
    """Kind, agent and domain of the pending items, and their order. The lists offer what is
    pending now (two small reads), but any value filters: a filter whose items were all decided
    meanwhile then matches nothing, never everything (which "all matching" would decide)."""

    kind = forms.CharField(required=False, max_length=50, widget=forms.Select)
    agent = forms.CharField(required=False, max_length=200, widget=forms.Select)
    domain = forms.CharField(required=False, max_length=100, widget=forms.Select)
    sort = forms.ChoiceField(required=False, choices=[(code, label) for code, (label, _) in SORTS.items()])

    def __init__(self, *args: Any, pending: QuerySet[ReviewItem], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        codes = {kind.code for kind in kinds.all()} | set(pending.order_by().values_list("kind", flat=True).distinct())
        agents = set(pending.exclude(agent=None).order_by().values_list("agent__agent_id", "agent__domain").distinct())
        promoted = pending.filter(payload__has_key="domain").order_by().values_list("payload__domain", flat=True)
        domains = {domain for _, domain in agents} | {str(domain) for domain in promoted.distinct()}
        offered = {
            "kind": {code: kinds.get(code).label for code in codes},
            "agent": {agent: agent for agent, _ in agents},
            "domain": {domain: domain for domain in domains if domain},
        }
        for name, choices in offered.items():
            chosen = self.data.get(name) if self.is_bound else None
            if chosen and chosen not in choices:
                choices[chosen] = kinds.get(chosen).label if name == "kind" else chosen
            self.fields[name].widget.choices = [ANY, *sorted(choices.items(), key=lambda choice: choice[1])]

    def apply(self, pending: QuerySet[ReviewItem]) -> QuerySet[ReviewItem]:
        """``pending`` narrowed to the filters and in the chosen order (oldest first unless told);
        a promotion has no agent, so its domain is the learning's (in its payload)."""
        filters = self.values()
        pending = pending.order_by(*SORTS[filters.get("sort", "oldest")][1])
        if "kind" in filters:
            pending = pending.filter(kind=filters["kind"])
        if "agent" in filters:
            pending = pending.filter(agent__agent_id=filters["agent"])
        if "domain" in filters:
            pending = pending.filter(Q(agent__domain=filters["domain"]) | Q(payload__domain=filters["domain"]))
        return pending
