"""Forms of the governance pages: a reviewer's decision on one inbox item.

The form checks the decision against what the item offers, so a crafted POST cannot answer a
question with something that was never one of its options, nor "answer" an escalation.
"""

from __future__ import annotations

from typing import Any

from django import forms

from governance.reviews.models import ReviewDecision, ReviewItem
from governance.reviews.services import COMMUNICATION_KIND, allowed_answers


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
