"""The shared review mechanism: any app opens review items; reviewers (or the system, on expiry)
decide them once; the app that opened an item reacts to the decision through a handler it
registered for that kind, inside the same transaction as the decision."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import transaction

from governance.kernel.exceptions import Conflict, Forbidden
from governance.kernel.principals import Principal
from governance.kernel.services import record
from governance.reviews.models import ReviewDecision, ReviewItem

if TYPE_CHECKING:
    from agents.models import Agent

DecisionHandler = Callable[[ReviewItem, ReviewDecision], None]
_handlers: dict[str, DecisionHandler] = {}

_STATUS_AFTER = {
    ReviewDecision.Decision.APPROVE: ReviewItem.Status.APPROVED,
    ReviewDecision.Decision.REJECT: ReviewItem.Status.REJECTED,
    ReviewDecision.Decision.ANSWER: ReviewItem.Status.ANSWERED,
    ReviewDecision.Decision.EXPIRE: ReviewItem.Status.EXPIRED,
}


def register(kind: str, handler: DecisionHandler) -> None:
    """Called from an AppConfig.ready(): ``handler`` runs when an item of ``kind`` is decided."""
    _handlers[kind] = handler


def payload_hash(payload: Any) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def open_item(
    *,
    actor: Principal,
    kind: str,
    title: str,
    payload: dict[str, Any],
    agent: Agent | None = None,
    expires_at: datetime | None = None,
) -> ReviewItem:
    """Put an item in the reviewer inbox (call inside the caller's transaction)."""
    item = ReviewItem.objects.create(kind=kind, title=title[:300], agent=agent, payload=payload, expires_at=expires_at)
    record(actor=actor, action="review.opened", target=item, kind=kind)
    return item


@transaction.atomic
def decide(
    item_id: int, *, actor: Principal, decision: str, comment: str = "", answer: Any = None, notify: bool = True
) -> ReviewDecision:
    """Decide a pending item once. A second decision is a Conflict naming who decided first.

    ``notify=False`` is for the app that opened the item withdrawing it itself: its handler
    must not react to its own withdrawal."""
    is_system = actor.user is None and actor.agent is None
    if not is_system and not actor.has_perm("governance.decide_reviewitem"):
        raise Forbidden("Deciding review items needs the reviewer permission.")
    if decision == ReviewDecision.Decision.EXPIRE and not is_system:
        raise Forbidden("Only the system expires review items.")
    item = ReviewItem.objects.select_for_update().get(pk=item_id)
    if item.status != ReviewItem.Status.PENDING:
        previous = ReviewDecision.objects.filter(item=item).first()
        raise Conflict(
            f"This item was already {item.status}"
            + (f" by {previous.decided_by} at {previous.decided_at:%Y-%m-%d %H:%M:%S %Z}." if previous else "."),
            item=item.pk,
            item_status=item.status,
        )
    outcome = ReviewDecision.objects.create(
        item=item,
        decision=decision,
        comment=comment,
        answer=answer,
        decided_by=actor.label,
        user=actor.user,
        payload_hash=payload_hash(item.payload),
    )
    item.status = _STATUS_AFTER[ReviewDecision.Decision(decision)]
    item.save(update_fields=["status"])
    record(actor=actor, action=f"review.{decision}", target=item, comment=comment, payload_hash=outcome.payload_hash)
    handler = _handlers.get(item.kind)
    if handler is not None and notify:
        handler(item, outcome)
    return outcome
