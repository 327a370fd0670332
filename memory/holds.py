"""Held memory: items no block or search serves until a reviewer releases them.

Two things hold an item. An agent's learning or watch note that the screen finds addressing the
model (memory/screening.py) is held as it is written, and opens one inbox item of kind
``memory_hold``: approving releases it, rejecting keeps it held for good (and archives a learning),
with the reviewer and the time in the decision log. And an operator who distrusts an agent
quarantines everything it wrote at once (``quarantine_author``): its live learnings and watch
notes are held in one statement each, without one inbox item per row; ``release_items`` lets them
out again. A held item keeps its text: the hold is a decision about serving, not an erasure.

Every serving path filters on ``held_at IS NULL`` (memory/search.py, memory/querysets.py), so a held
item is as absent from an agent's block, search and reads by id as one that was never written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.db.models import Model, QuerySet
from django.db.models.functions import Lower
from django.utils import timezone

from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Forbidden
from governance.kernel.principals import SYSTEM, Principal
from governance.kernel.services import record
from governance.reviews import services as reviews
from governance.reviews.kinds import ReviewKind, payload_field
from governance.reviews.models import ReviewDecision, ReviewItem
from memory import screening
from memory.models import Learning, VeilleNote

REVIEW_KIND = "memory_hold"
QUARANTINED = "quarantined with every item of {author} by {actor}"
REJECTED = "rejected by {actor}"
HELD_KINDS: dict[str, type[Learning] | type[VeilleNote]] = {"learning": Learning, "veille": VeilleNote}


def _seen_in(domain: str | None) -> Callable[[str], bool]:
    """Whether a served item already links to a host: the domain's live learnings for a
    learning, the served watch notes for a note (they are fleet-wide)."""
    if domain is None:
        served: QuerySet[Any] = VeilleNote.objects.filter(held_at__isnull=True)
        fields: tuple[str, ...] = ("summary__icontains", "title__icontains")
    else:
        served = (
            Learning.objects.alias(domain_key=Lower("domain"))
            .filter(domain_key=domain.lower(), held_at__isnull=True)
            .exclude(scope=Learning.Scope.ARCHIVED)
        )
        fields = ("text__icontains",)

    def seen(host: str) -> bool:
        return any(served.filter(**{field: f"://{host}"}).exists() for field in fields)

    return seen


def screen_learning(actor: Principal, text: str, domain: str) -> list[str]:
    """Why an agent's learning must be held (empty: serve it). Operators' writes are theirs."""
    if actor.agent is None:
        return []
    return screening.screen(text, seen_host=_seen_in(domain))


def screen_note(actor: Principal, title: str, summary: str) -> list[str]:
    """Why an agent's watch note must be held (empty: serve it)."""
    if actor.agent is None:
        return []
    return screening.screen_all([title, summary], seen_host=_seen_in(None))


def held(reasons: list[str]) -> dict[str, Any]:
    """The fields an item being written gets when the screen found ``reasons`` (none: nothing), so
    it is stored held in the same INSERT or UPDATE that writes it."""
    return {"held_at": timezone.now(), "held_reasons": reasons} if reasons else {}


def ask_reviewer(item: Learning | VeilleNote, reasons: list[str], *, actor: Principal) -> ReviewItem:
    """Open the inbox item about an item just stored held (in the writer's transaction)."""
    kind = "learning" if isinstance(item, Learning) else "veille"
    text = item.text if isinstance(item, Learning) else f"{item.title}\n\n{item.summary}"
    record(actor=actor, action=AuditAction.MEMORY_HELD, target=item, reasons=reasons)
    return reviews.open_item(
        actor=actor,
        kind=REVIEW_KIND,
        title=f"Held {kind} by {actor.label}: release it to the fleet's blocks?",
        agent=actor.agent,
        payload={"kind": kind, "id": item.pk, "text": text[:4000], "reasons": reasons, "author": actor.label},
    )


def on_review_decided(item: ReviewItem, decision: ReviewDecision) -> None:
    """A reviewer released or rejected a held item (registered in AppConfig.ready)."""
    model = HELD_KINDS.get(str((item.payload or {}).get("kind")))
    if model is None:
        return
    pk = (item.payload or {}).get("id")
    held = model.objects.select_for_update().filter(pk=pk, held_at__isnull=False).first() if pk else None
    if held is None:
        return
    actor = Principal(user=decision.user) if decision.user else SYSTEM
    if decision.decision == ReviewDecision.Decision.APPROVE:
        _release([held], actor=actor)
        return
    held.held_reasons = [*held.held_reasons, REJECTED.format(actor=actor.label)]
    fields = ["held_reasons"]
    if isinstance(held, Learning) and held.scope != Learning.Scope.ARCHIVED:
        held.scope, held.scope_changed_at = Learning.Scope.ARCHIVED, timezone.now()
        fields += ["scope", "scope_changed_at"]
    held.save(update_fields=fields)
    record(actor=actor, action=AuditAction.MEMORY_HOLD_REJECTED, target=held, review_item=str(item.pk))


# The held text is what the reviewer decides on. Not announced: no notification event names held
# memory (governance.notifications.models.EventKind); reviewers find it in the inbox.
REVIEW = ReviewKind(
    code=REVIEW_KIND,
    label="Held memory",
    template="memory/review_kinds/memory_hold.html",
    summary=payload_field("text"),
    on_decided=on_review_decided,
)


def _require(actor: Principal, perm: str) -> None:
    if actor.agent is not None or (actor.user is not None and not actor.has_perm(perm)):
        raise Forbidden(f"This needs the {perm} permission.")


@transaction.atomic(durable=True)
def quarantine_author(author_id: int, *, actor: Principal) -> dict[str, int]:
    """Hold every live learning and watch note ``author_id`` (an agent's pk) wrote, at once.
    Returns how many of each were held; items already held stay as they are."""
    _require(actor, "memory.change_learning")
    from agents.models import Agent

    author = Agent.objects.get(pk=author_id)
    reason = QUARANTINED.format(author=author.agent_id, actor=actor.label)
    now = timezone.now()
    counts = {}
    for kind, model in HELD_KINDS.items():
        items = model.objects.filter(author_id=author_id, held_at__isnull=True)
        counts[kind] = items.update(held_at=now, held_reasons=[reason])
    record(actor=actor, action=AuditAction.MEMORY_QUARANTINED, target=author, **counts)
    return counts


def _release(items: list[Model], *, actor: Principal) -> None:
    for item in items:
        item.held_at, item.held_reasons = None, []  # type: ignore[attr-defined]
        item.save(update_fields=["held_at", "held_reasons"])
        record(actor=actor, action=AuditAction.MEMORY_RELEASED, target=item)


@transaction.atomic(durable=True)
def release_items(items: QuerySet[Any], *, actor: Principal) -> int:
    """Let held items be served again (an operator's decision, one audit row each)."""
    _require(actor, "memory.change_learning")
    chosen = items.model.objects.filter(pk__in=items.values("pk"), held_at__isnull=False)  # as chosen, unjoined
    held = list(chosen.select_for_update())
    _release(held, actor=actor)
    return len(held)
