"""Forms of the governance pages: the inbox's filters and a reviewer's decision on one inbox item.

The decision form checks the decision against what the item offers, so a crafted POST cannot answer a
question with something that was never one of its options, nor "answer" an escalation; and it
carries the hash of the content the reviewer was shown (``shown``), which the decision binds to.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import Q, QuerySet

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
        return data


class InboxFilterForm(FilterForm):
    """Kind, agent and domain of the pending items. The lists offer what is pending now (two
    small reads), but any value filters: a filter whose items were all decided meanwhile then
    matches nothing, never everything (which "select all matching" would decide)."""

    kind = forms.CharField(required=False, max_length=50, widget=forms.Select)
    agent = forms.CharField(required=False, max_length=200, widget=forms.Select)
    domain = forms.CharField(required=False, max_length=100, widget=forms.Select)

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
        """``pending`` narrowed to the filters; a promotion has no agent, so its domain is the
        learning's (in its payload)."""
        filters = self.values()
        if "kind" in filters:
            pending = pending.filter(kind=filters["kind"])
        if "agent" in filters:
            pending = pending.filter(agent__agent_id=filters["agent"])
        if "domain" in filters:
            pending = pending.filter(Q(agent__domain=filters["domain"]) | Q(payload__domain=filters["domain"]))
        return pending
