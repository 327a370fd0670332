"""Forms of the governance pages: a reviewer's decision on one inbox item.

The form checks the decision against what the item offers, so a crafted POST cannot answer a
question with something that was never one of its options, nor "answer" an escalation.
"""

from __future__ import annotations

from typing import Any

from django import forms

from governance.reviews.models import ReviewDecision, ReviewItem

COMMUNICATION_KIND = "session_communication"
# A Validation module asks yes or no. Both buttons answer (approve/reject as plain decisions
# would reach the model as "declined to answer"), with these words.
VALIDATION_ANSWERS = ("Approved", "Rejected")


def allowed_answers(item: ReviewItem) -> tuple[str, ...]:
    """The answers a communication item accepts: its options, or yes/no for a Validation module."""
    if item.kind != COMMUNICATION_KIND:
        return ()
    module = (item.payload or {}).get("module") or {}
    if module.get("type") == "MultipleChoice":
        return tuple((module.get("data") or {}).get("options") or ())
    if module.get("type") == "Validation":
        return VALIDATION_ANSWERS
    return ()


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

    def __init__(self, *args: Any, item: ReviewItem, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.item = item

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        decision, answer = data.get("decision"), data.get("answer") or ""
        if decision == ReviewDecision.Decision.ANSWER:
            if answer not in allowed_answers(self.item):
                raise forms.ValidationError("Choose one of the answers the request offers.")
        elif decision is not None:
            if self.item.kind == COMMUNICATION_KIND and decision == ReviewDecision.Decision.APPROVE:
                raise forms.ValidationError("A question is answered, not approved.")
            data["answer"] = None
        return data
