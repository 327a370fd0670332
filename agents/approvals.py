"""Approvals an agent asks a human for (MCP ``request_approval``): an item in the reviewer inbox,
bound to the hash of what the agent showed, that the agent polls with ``get_approval``.

Nothing waits on a worker: the request returns at once with the item's id and status. A request
not decided in ``REVIEW_EXPIRY_HOURS`` expires (the escalation sweep closes it, and a poll past
the deadline does too), and each request counts against the agent's pending limit
(``agents.quotas.admit_ask``, shared with every other way it asks a human), so a looping agent
cannot flood the inbox.
"""

from __future__ import annotations

import contextlib
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from governance.kernel.exceptions import Conflict, Forbidden, NotFound
from governance.kernel.principals import Principal
from governance.notifications.models import EventKind
from governance.reviews import services as reviews
from governance.reviews.kinds import ReviewKind, payload_field
from governance.reviews.models import ReviewItem

REVIEW_KIND = "agent.approval"


# The row shows the request's details, then the whole payload the decision is bound to (the
# generic template). Nothing is done on a decision: the agent reads it (``approval``).
REVIEW = ReviewKind(
    code=REVIEW_KIND,
    label="Approval request",
    summary=payload_field("details"),
    announces_as=EventKind.INBOX_TOOL_APPROVAL,
    asked_by_agent=True,
)


def request_approval(*, actor: Principal, title: str, details: str = "", payload: Any = None) -> ReviewItem:
    """Open an approval request of the calling agent; the decision is bound to ``payload``'s hash."""
    if actor.agent is None:
        raise Forbidden("Only an agent asks for an approval.")
    agent = actor.agent
    with transaction.atomic(durable=True):
        return reviews.open_item(  # within the agent's pending limit, or RateLimited (REVIEW.asked_by_agent)
            actor=actor,
            kind=REVIEW_KIND,
            title=f"{agent.agent_id}: {title}",
            agent=agent,
            payload={"details": details, "payload": payload, "payloadHash": reviews.payload_hash(payload)},
            expires_at=timezone.now() + timedelta(hours=settings.REVIEW_EXPIRY_HOURS),
        )


def approval(principal: Principal, item_id: int) -> ReviewItem:
    """One of the calling agent's approval requests, expired first if its deadline passed."""
    item = ReviewItem.objects.visible_to(principal).filter(pk=item_id, kind=REVIEW_KIND).first()
    if item is None:
        raise NotFound(f"No approval request {item_id}.")
    if item.status == ReviewItem.Status.PENDING and item.expires_at is not None and item.expires_at <= timezone.now():
        with contextlib.suppress(Conflict):  # decided meanwhile: that decision stands
            reviews.expire(item.pk)
        item.refresh_from_db()
    return item


def describe(item: ReviewItem) -> dict[str, Any]:
    """The agent's view of its request: status, and who decided what when it is decided."""
    decision = getattr(item, "decision", None) if item.status != ReviewItem.Status.PENDING else None
    return {
        "id": item.pk,
        "status": item.status,
        "title": item.title,
        "payloadHash": item.payload.get("payloadHash"),
        "expiresAt": item.expires_at,
        "decision": None
        if decision is None
        else {
            "decision": decision.decision,
            "comment": decision.comment,
            "decidedBy": decision.decided_by,
            "decidedAt": decision.decided_at,
        },
    }
