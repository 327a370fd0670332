"""The shared review mechanism: any app opens review items; reviewers (or the system, on expiry)
decide them once; the app that opened an item reacts to the decision through the handler of the
kind it declared (``governance.reviews.kinds``), inside the same transaction as the decision.

An item with a deadline (``expires_at``) is decided before it or not at all: past it, a
reviewer's decision is a Conflict, and the beat task ``reviews.expire_due`` expires it (unless
its app expires that kind itself), so nothing approved late is ever acted on."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Conflict, Forbidden, InvalidInput
from governance.kernel.periodic import Failures
from governance.kernel.principals import SYSTEM, Principal
from governance.kernel.services import record
from governance.notifications import services as notifications
from governance.reviews import kinds

# payload_hash: what decisions, tool grants and agents' requests are bound to (reviews.payload_hash).
from governance.reviews.models import ReviewDecision, ReviewItem, payload_hash

if TYPE_CHECKING:
    from agents.models import Agent

_STATUS_AFTER = {
    ReviewDecision.Decision.APPROVE: ReviewItem.Status.APPROVED,
    ReviewDecision.Decision.REJECT: ReviewItem.Status.REJECTED,
    ReviewDecision.Decision.ANSWER: ReviewItem.Status.ANSWERED,
    ReviewDecision.Decision.EXPIRE: ReviewItem.Status.EXPIRED,
}
_ACTION_OF = {
    ReviewDecision.Decision.APPROVE: AuditAction.REVIEW_APPROVE,
    ReviewDecision.Decision.REJECT: AuditAction.REVIEW_REJECT,
    ReviewDecision.Decision.ANSWER: AuditAction.REVIEW_ANSWER,
    ReviewDecision.Decision.EXPIRE: AuditAction.REVIEW_EXPIRE,
}


def open_item(
    *,
    actor: Principal,
    kind: str,
    title: str,
    payload: dict[str, Any],
    agent: Agent | None = None,
    expires_at: datetime | None = None,
) -> ReviewItem:
    """Put an item in the reviewer inbox (call inside the caller's transaction), announced as its
    kind says. An item an agent asks a human with (its kind ``asked_by_agent``) must first fit
    the agent's pending limit, whoever opens it: past it, RateLimited and nothing is written."""
    if agent is not None and kinds.get(kind).asked_by_agent:
        kinds.PENDING_ASKS.get()(agent)
    item = ReviewItem.objects.create(kind=kind, title=title[:300], agent=agent, payload=payload, expires_at=expires_at)
    record(actor=actor, action=AuditAction.REVIEW_OPENED, target=item, kind=kind)
    event = kinds.get(kind).announces_as
    if event is not None:
        _announce(item, event)
    return item


def _announce(item: ReviewItem, event: str) -> None:
    """Tell reviewers what is to be decided: the item's title, its agent, its kind's summary (the
    tool and its arguments, the actions, the question: one line, cut and masked by the
    notifications) and a link to the item's page; never the payload itself (outputs)."""
    facts = {"agent": item.agent.agent_id if item.agent else "—", "item": str(item.pk)}
    if item.expires_at is not None:
        facts["expires"] = item.expires_at.isoformat(timespec="minutes")
    notifications.announce(
        event,
        agent=item.agent.agent_id if item.agent else None,
        domain=item.agent.domain if item.agent else None,
        title=item.title,
        link_path=reverse("reviews:item", kwargs={"item_id": item.pk}),
        facts=facts,
        summary=item.decision_text,
    )


def _require_reviewer(actor: Principal) -> None:
    if not actor.has_perm("governance.decide_reviewitem"):
        raise Forbidden("Deciding review items needs the reviewer permission.")


# Not durable: deciding runs inside other writes too (bulk decisions, expiry, an escalation that expires).
@transaction.atomic
def decide(
    item_id: int,
    *,
    actor: Principal,
    decision: str,
    comment: str = "",
    answer: Any = None,
    notify: bool = True,
    shown_hash: str | None = None,
    amendment: Any = None,
) -> ReviewDecision:
    """Decide a pending item once. A second decision is a Conflict naming who decided first, and
    so is a decision past the item's deadline.

    ``shown_hash`` is the ``content_hash`` of the item as the decider read it (the inbox posts
    it): when the item's content changed since, the decision is a Conflict, so that it always
    binds to what was shown. ``notify=False`` is for the app that opened the item withdrawing it
    itself: its handler must not react to its own withdrawal.

    ``amendment`` is a reviewer's edit of what they approve (a tool call's arguments), for kinds
    that take one (``ReviewKind.amend``, which checks it: InvalidInput names the failing path and
    nothing is decided). The item keeps what was asked; the decision, its audit row and the kind's
    handler get the payload approved instead (``amended``, with its hash)."""
    is_system = actor.user is None and actor.agent is None
    if not is_system:
        _require_reviewer(actor)
    if decision == ReviewDecision.Decision.EXPIRE and not is_system:
        raise Forbidden("Only the system expires review items.")
    item = ReviewItem.objects.select_for_update().get(pk=item_id)
    if item.status != ReviewItem.Status.PENDING:
        previous = ReviewDecision.objects.filter(item=item).first()
        raise Conflict(
            f"This item was already {item.status}"
            + (f" by {previous.decider} at {previous.decided_at:%Y-%m-%d %H:%M:%S %Z}." if previous else "."),
            item=item.pk,
            item_status=item.status,
        )
    if decision != ReviewDecision.Decision.EXPIRE and item.expires_at is not None and item.expires_at <= timezone.now():
        raise Conflict(
            f"This item expired at {item.expires_at:%Y-%m-%d %H:%M:%S %Z}: it can no longer be decided.",
            item=item.pk,
            item_status=ReviewItem.Status.EXPIRED,
            expired_at=item.expires_at.isoformat(),
            reason="expired",
        )
    current = payload_hash(item.payload)
    if shown_hash is not None and shown_hash != current:
        raise Conflict(
            "This item changed since it was shown: read it again before deciding.",
            item=item.pk,
            reason="changed",
            payloadHash=current,
        )
    amended = _amended(item, decision, amendment) if amendment is not None else None
    outcome = ReviewDecision.objects.create(
        item=item,
        decision=decision,
        comment=comment,
        answer=answer,
        decided_by=actor.label,
        user=actor.user,
        minted_by=actor.minted_by,
        payload_hash=current,
        amended=amended,
        amended_hash=payload_hash(amended) if amended is not None else "",
    )
    decided = ReviewDecision.Decision(decision)
    item.status = _STATUS_AFTER[decided]
    item.save(update_fields=["status"])
    # An amended approval keeps both versions in its audit row: what was asked, what was approved.
    both = (
        {"payload": item.payload, "amended": amended, "amended_hash": outcome.amended_hash}
        if amended is not None
        else {}
    )
    record(
        actor=actor, action=_ACTION_OF[decided], target=item, comment=comment, payload_hash=outcome.payload_hash, **both
    )
    handler = kinds.get(item.kind).on_decided
    if handler is not None and notify:
        handler(item, outcome)
    return outcome


def _amended(item: ReviewItem, decision: str, amendment: Any) -> dict[str, Any] | None:
    """The payload approved instead of the item's, as its kind's ``amend`` makes it from the
    reviewer's edit; None when the edit changes nothing (a plain approval). Only an approval is
    amended, and only of a kind that takes edits."""

    def refused(msg: str) -> InvalidInput:
        return InvalidInput(msg, errors=[{"loc": ["body", "arguments"], "msg": msg, "type": "not_editable"}])

    if decision != ReviewDecision.Decision.APPROVE:
        raise refused("Edited arguments go with an approval only.")
    amend = item.review_kind.amend
    if amend is None:
        raise refused(f"A {item.kind_label.lower()} item is approved as it is: it takes no edited arguments.")
    amended = amend(item.payload_dict, amendment)
    return None if payload_hash(amended) == payload_hash(item.payload) else amended


DECIDED, CONFLICT, FORBIDDEN, NOT_FOUND = "decided", "conflict", "forbidden", "not_found"


@dataclass(frozen=True)
class BulkOutcome:
    """What became of each item of a bulk decision, in the order asked: ``decided``, or
    ``conflict`` (decided meanwhile, past its deadline, or changed since it was shown),
    ``forbidden`` (the decision is not one this item takes: a question approved, an answer that is
    not one of its options, a kind decided one by one), ``not_found``."""

    results: list[tuple[int, str]]

    @property
    def decided(self) -> int:
        return sum(status == DECIDED for _, status in self.results)

    def count(self, status: str) -> int:
        return sum(outcome == status for _, outcome in self.results)

    @property
    def skipped(self) -> int:
        return len(self.results) - self.decided


def _takes_in_bulk(item: ReviewItem, decision: str, answer: str | None) -> bool:
    """Whether ``item`` may be decided this way with others: its kind allows bulk decisions, and
    the decision is one its own buttons offer (so a bulk approval never approves a question, and a
    common answer reaches only the questions that offer it)."""
    kind, payload = item.review_kind, item.payload_dict
    if not kind.bulk:
        return False
    if decision == ReviewDecision.Decision.ANSWER:
        return answer is not None and answer in kind.answers(payload)
    return decision == ReviewDecision.Decision.REJECT or kind.approvable(payload)


def decide_many(
    item_ids: Iterable[int],
    *,
    actor: Principal,
    decision: str,
    comment: str = "",
    answer: str | None = None,
    shown: Mapping[int, str] | None = None,
) -> BulkOutcome:
    """One bulk decision: the reviewer permission is checked before anything is read, then each
    item is decided by ``decide`` in its own transaction (so each app reacts as to a single
    decision, is audited as one, and one refused item does not undo the others). Each item is
    bound to its own content: ``shown`` maps the items the reviewer saw to the hash of what they
    saw, and one that changed since is a conflict, as is one decided meanwhile or past its
    deadline: never decided twice, never late, never on content nobody read."""
    _require_reviewer(actor)
    if decision == ReviewDecision.Decision.EXPIRE:
        raise Forbidden("Only approve, reject and answer are decided in bulk.")
    shown = shown or {}
    ids = list(item_ids)
    items = ReviewItem.objects.in_bulk(ids)
    results = []
    for item_id in ids:
        item = items.get(item_id)
        if item is None:
            results.append((item_id, NOT_FOUND))
            continue
        if not _takes_in_bulk(item, decision, answer):
            results.append((item_id, FORBIDDEN))
            continue
        try:
            decide(
                item_id,
                actor=actor,
                decision=decision,
                comment=comment,
                answer=answer if decision == ReviewDecision.Decision.ANSWER else None,
                shown_hash=shown.get(item_id),
            )
        except Conflict:
            results.append((item_id, CONFLICT))
        except Forbidden:
            results.append((item_id, FORBIDDEN))
        else:
            results.append((item_id, DECIDED))
    return BulkOutcome(results=results)


def expire(item_id: int, *, comment: str = "Not decided in time.") -> ReviewDecision:
    """The system closes a pending item at its deadline; its app reacts as to any decision (a
    tool grant expires, a waiting session goes on without the actions). Conflict when decided."""
    return decide(item_id, actor=SYSTEM, decision=ReviewDecision.Decision.EXPIRE, comment=comment)


def expire_due() -> dict[str, Any]:
    """Beat task body: every pending item past its deadline is expired, whatever its kind, but
    for the kinds whose app expires them itself. Each in its own transaction; one that raises
    is logged, reported under ``errors`` and skipped (the next run tries it again), and the
    others are expired all the same."""
    due = (
        ReviewItem.objects.filter(status=ReviewItem.Status.PENDING, expires_at__lte=timezone.now())
        .exclude(kind__in=[kind.code for kind in kinds.all() if kind.expires_itself])
        .order_by("expires_at")
    )
    failures = Failures("reviews")
    expired = 0
    for item_id in list(due.values_list("pk", flat=True)):
        with failures.guard(f"review item {item_id}"):
            try:
                expire(item_id)
            except Conflict:  # decided meanwhile: that decision stands
                continue
            expired += 1
    return {"expired": expired, **failures.as_dict()}


def answer(
    item_id: int, *, actor: Principal, response: str, comment: str = "", shown_hash: str | None = None
) -> ReviewDecision:
    """A reviewer answers a MultipleChoice question with one of its options (the API's
    ``"decision": "answer"``): the same decision as the inbox's answer button, so the session
    that asked gets the answer through the same handler. The reviewer permission is checked
    before the item is read, so the options never reach someone who may not decide; only then
    is the answer checked (422 at ``response``); ``decide`` refuses an item decided already (409)."""
    _require_reviewer(actor)
    item = ReviewItem.objects.get(pk=item_id)
    options = item.review_kind.options(item.payload_dict)
    if options is None:
        msg = "only a MultipleChoice question is answered; approve or reject this item"
        raise InvalidInput(msg, errors=[{"loc": ["body", "decision"], "msg": msg, "type": "not_a_question"}])
    if response not in options:
        msg = f"one of the question's options: {', '.join(options)}"
        raise InvalidInput(msg, errors=[{"loc": ["body", "response"], "msg": msg, "type": "not_an_option"}])
    return decide(
        item_id,
        actor=actor,
        decision=ReviewDecision.Decision.ANSWER,
        comment=comment,
        answer=response,
        shown_hash=shown_hash,
    )
