"""Reviews router (/api/v1/reviews): operators decide review items with an operator key."""

from __future__ import annotations

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Router
from ninja.pagination import paginate

from governance.kernel.auth import caller, operator_key
from governance.kernel.exceptions import Forbidden
from governance.kernel.validation import BoundedLimitOffsetPagination
from governance.reviews import services as reviews
from governance.reviews.models import ReviewDecision, ReviewItem
from governance.reviews.schemas import BulkDecisionIn, BulkDecisionOut, DecisionIn, DecisionOut, ReviewItemOut

router = Router(tags=["reviews"], auth=operator_key)


@router.get("", operation_id="list_review_items", response=list[ReviewItemOut])
@paginate(BoundedLimitOffsetPagination)
def list_review_items(request: HttpRequest, status: str = "pending") -> QuerySet[ReviewItem]:
    if not caller(request).has_perm("governance.view_reviewitem"):
        raise Forbidden("Your account may not view review items.")
    return ReviewItem.objects.filter(status=status).select_related("agent")


@router.post("/decisions", operation_id="decide_review_items", response=BulkDecisionOut)
def decide_review_items(request: HttpRequest, data: BulkDecisionIn) -> dict:
    """Approve or reject several items, each decided on its own terms and audited as a single
    decision would be: `conflict` for one decided meanwhile or past its deadline."""
    outcome = reviews.decide_many(data.ids, actor=caller(request), decision=data.decision, comment=data.comment)
    return {"results": [{"id": item_id, "status": status} for item_id, status in outcome.results]}


@router.post("/{item_id}/decision", operation_id="decide_review_item", response=DecisionOut)
def decide_review_item(request: HttpRequest, item_id: int, data: DecisionIn) -> ReviewDecision:
    """Approve or reject a pending item, or answer a MultipleChoice question with one of its
    options (`"decision": "answer", "response": "<option>"`); 409 when it was already decided or
    its deadline passed, or when `payloadHash` (the item's as you read it) no longer matches. A
    tool call may be approved with edited `arguments` (422 at the path that fails its input schema)."""
    actor = caller(request)
    if data.decision == "answer":
        return reviews.answer(
            item_id, actor=actor, response=data.response or "", comment=data.comment, shown_hash=data.payloadHash
        )
    return reviews.decide(
        item_id,
        actor=actor,
        decision=data.decision,
        comment=data.comment,
        shown_hash=data.payloadHash,
        amendment=data.arguments,
    )
