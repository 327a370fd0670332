"""The learnings lifecycle (seed 004 section 2.4): scope migration, promotion proposals and their
application, and eviction to ARCHIVED. Rules live in memory/scope.py; this module owns the writes.

Promotions are proposed by the scheduled job and applied at once (LEARNINGS_PROMOTION_MODE=auto)
or after a reviewer's approval in the inbox (review, the default). Nothing is ever deleted here:
eviction archives, and archived rows leave the active vector indexes (erasing is memory/privacy.py).

Operators also move a learning by hand (`archive`, `restore`, `demote`; the change permission,
never an agent nor a reviewer). A restored learning goes back to `story` and gets another
EVICTION_AGE_DAYS to be injected before eviction sees it as stale again: its age is counted from
the restore. A demotion is not pinned: a learning whose reuse score still earns the scope above is
proposed for it again by the next promotion run.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from agents import triggers as job_triggers
from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Conflict, NotFound
from governance.kernel.models import AuditEvent
from governance.kernel.periodic import Failures
from governance.kernel.principals import SYSTEM, Principal
from governance.kernel.services import record
from governance.notifications.models import EventKind
from governance.reviews import services as reviews
from governance.reviews.kinds import ReviewKind, payload_field
from governance.reviews.models import ReviewDecision, ReviewItem
from memory import scope
from memory.models import Embedding, Learning, LearningInjection, PromotionProposal, ReuseScore
from memory.privacy import require_operator

logger = logging.getLogger(__name__)

REVIEW_KIND = "learning_promotion"


@dataclass
class LifecycleReport:
    migrated: int = 0
    proposed: int = 0
    applied: int = 0
    refused: int = 0
    archived: int = 0
    details: list[str] = field(default_factory=list)
    errors: int = 0  # learnings a run could not handle (governance.kernel.periodic), named in error_items
    error_items: list[dict[str, str]] = field(default_factory=list)


@transaction.atomic(durable=True)
def migrate_scopes() -> LifecycleReport:
    """Mark every learning as migrated (seed --migrate): rows imported without a scope got
    `story` on the way in; the sentinel makes the step idempotent (TC-NOM-08)."""
    count = Learning.objects.filter(scope_migrated_at__isnull=True).update(scope_migrated_at=timezone.now())
    return LifecycleReport(migrated=count)


def _candidates():
    """Learnings whose key has a score at or above the next threshold, without an open proposal."""
    open_proposal = PromotionProposal.objects.filter(learning=OuterRef("pk"), status=PromotionProposal.Status.PROPOSED)
    scores = ReuseScore.objects.filter(
        story=OuterRef("story"), gate=OuterRef("gate"), tags_hash=OuterRef("tags_hash")
    ).values("reuse_score")[:1]
    return (
        Learning.objects.filter(scope__in=[Learning.Scope.STORY, Learning.Scope.DOMAIN])
        .annotate(score=scores, pending=Exists(open_proposal))
        .filter(pending=False)
        .filter(
            Q(scope=Learning.Scope.STORY, score__gte=scope.PROMOTE_TO_DOMAIN)
            | Q(scope=Learning.Scope.DOMAIN, score__gte=scope.PROMOTE_TO_GLOBAL)
        )
    )


def propose_promotions(*, mode: str | None = None) -> LifecycleReport:
    """Write a proposal per eligible learning (one step at a time); apply them at once in `auto`
    mode, or send each to the reviewer inbox in `review` mode."""
    mode = mode or settings.LEARNINGS_PROMOTION_MODE
    report = LifecycleReport()
    unscored = (
        Learning.objects.filter(scope__in=[Learning.Scope.STORY, Learning.Scope.DOMAIN])
        .exclude(
            Exists(
                ReuseScore.objects.filter(
                    story=OuterRef("story"), gate=OuterRef("gate"), tags_hash=OuterRef("tags_hash")
                )
            )
        )
        .count()
    )
    if unscored:
        # ERR-295-10: no score row to join (never injected) -> 0.0, excluded from promotion.
        logger.info("[lifecycle] %s learning(s) without a reuse score: treated as 0.0, not promoted", unscored)
        report.details.append(f"{unscored} unscored")
    failures = Failures("lifecycle")
    for learning in _candidates():
        target = scope.promotion_target(scope.Scope(learning.scope), learning.score)
        if target is None:
            continue
        with failures.guard(f"learning {learning.pk}"):
            try:
                outcome = _propose(learning, learning.score, target, mode)
            except IntegrityError:
                continue  # a concurrent run (a task delivered twice) proposed this step first
            report.proposed += 1
            report.applied += outcome == PromotionProposal.Status.APPLIED
            report.refused += outcome == PromotionProposal.Status.REFUSED
    report.errors, report.error_items = failures.count, failures.items
    return report


def _propose(learning: Learning, score: Decimal, target: scope.Scope, mode: str) -> str:
    """One step up for ``learning`` (its reuse ``score``, annotated by `_candidates`): applied at
    once in `auto` mode, else an inbox item; returns the proposal's status."""
    with transaction.atomic():
        proposal = PromotionProposal.objects.create(
            learning=learning, from_scope=learning.scope, to_scope=target.value, reuse_score=score
        )
        if mode == "auto":
            return _apply(proposal, actor=SYSTEM)
        proposal.review_item = reviews.open_item(
            actor=SYSTEM,
            kind=REVIEW_KIND,
            title=f"Promote a {learning.scope} learning of {learning.story} to {target.value}",
            payload={
                "proposal": proposal.pk,
                "learning": learning.pk,
                "from": learning.scope,
                "to": target.value,
                "reuse_score": str(score),
                "text": learning.text[:2000],
                "tags": learning.tags,
                "domain": learning.domain,
            },
        )
        proposal.save(update_fields=["review_item"])
        return proposal.status


def _apply(proposal: PromotionProposal, *, actor: Principal) -> str:
    """Move the learning one scope up if the rules still allow it; otherwise the proposal is
    refused (counted and logged) and the learning stays as it is."""
    learning = Learning.objects.select_for_update().get(pk=proposal.learning_id)
    now = timezone.now()
    try:
        target = scope.transition(scope.Scope(learning.scope), scope.Scope(proposal.to_scope))
    except scope.TransitionRefused as exc:
        logger.warning("[lifecycle] transition refused: learning=%s %s", learning.pk, exc)
        proposal.status = PromotionProposal.Status.REFUSED
    else:
        previous = learning.scope
        learning.scope, learning.scope_changed_at = target.value, now
        learning.save(update_fields=["scope", "scope_changed_at"])
        record(
            actor=actor, action=AuditAction.LEARNING_PROMOTED, target=learning, previous=previous, scope=target.value
        )
        job_triggers.learning_promoted(
            learning_id=learning.pk, story=learning.story, domain=learning.domain, scope=target.value, previous=previous
        )
        proposal.status = PromotionProposal.Status.APPLIED
    proposal.decided_at, proposal.decided_by = now, actor.label
    proposal.save(update_fields=["status", "decided_at", "decided_by"])
    return proposal.status


def on_review_decided(item: ReviewItem, decision: ReviewDecision) -> None:
    """A reviewer approved or rejected a promotion in the inbox (registered in AppConfig.ready)."""
    proposal = PromotionProposal.objects.filter(review_item=item, status=PromotionProposal.Status.PROPOSED).first()
    if proposal is None:
        return
    actor = Principal(user=decision.user) if decision.user else SYSTEM
    if decision.decision == ReviewDecision.Decision.APPROVE:
        _apply(proposal, actor=actor)
    else:
        proposal.status = PromotionProposal.Status.REJECTED
        proposal.decided_at, proposal.decided_by = timezone.now(), actor.label
        proposal.save(update_fields=["status", "decided_at", "decided_by"])


# The learning is what the reviewer decides on; promotions alone are decided many at a time.
REVIEW = ReviewKind(
    code=REVIEW_KIND,
    label="Learning promotion",
    template="memory/review_kinds/learning_promotion.html",
    summary=payload_field("text"),
    on_decided=on_review_decided,
    announces_as=EventKind.INBOX_PROMOTION,
)


# Not durable: load_demo runs each app's demo, which calls this, in one transaction.
@transaction.atomic
def evict(*, today: date | None = None) -> LifecycleReport:
    """Archive, in one transaction, every live learning older than EVICTION_AGE_DAYS (from
    date_created, else date; from its restore for a restored one) that was never injected
    (INV-295-11). Archived rows leave the active vector indexes (INV-295-12), and each gets its
    audit row.

    One statement of data-modifying CTEs: the learnings, their embeddings and the audit rows
    are written set-wise, without bringing tens of thousands of ids through Python."""
    today = today or timezone.localdate()
    cutoff = today - timedelta(days=scope.EVICTION_AGE_DAYS)  # age_days > 56  <=>  created < cutoff
    params = {
        "archived": Learning.Scope.ARCHIVED,
        "cutoff": cutoff,
        "now": timezone.now(),
        "actor": SYSTEM.label,
        "action": AuditAction.LEARNING_ARCHIVED.value,
        "target_type": Learning._meta.label_lower,
        "data": json.dumps({"reason": "stale"}),
    }
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_EVICT, params)
        archived = cursor.rowcount
    logger.info("[lifecycle] evicted: %s learnings archived (cutoff %s)", archived, cutoff)
    return LifecycleReport(archived=archived)


_EVICT = f"""
    WITH stale AS (
        UPDATE {Learning._meta.db_table} l
           SET scope = %(archived)s, archived_at = %(now)s, scope_changed_at = %(now)s
         WHERE l.scope <> %(archived)s
           AND COALESCE(l.restored_at::date, l.date_created, l.date) < %(cutoff)s
           AND NOT EXISTS (SELECT 1 FROM {LearningInjection._meta.db_table} i WHERE i.learning_id = l.id)
        RETURNING l.id
    ),
    vectors AS (
        UPDATE {Embedding._meta.db_table} e SET active = false
         WHERE e.kind = 'learning' AND e.object_id = ANY(ARRAY(SELECT id FROM stale))
    )
    INSERT INTO {AuditEvent._meta.db_table} (at, actor, action, target_type, target_id, data)
    SELECT %(now)s, %(actor)s, %(action)s, %(target_type)s, stale.id::text, %(data)s::jsonb FROM stale
"""


CHANGE = "memory.change_learning"


def _move_by_hand(
    learning_id: int, *, actor: Principal, action: AuditAction, rule: Callable[[scope.Scope], scope.Scope], **data: str
) -> Learning:
    """Check the operator, lock the learning, move it where ``rule`` says and audit it as
    ``action`` with its previous and new scope (a refused move is a 409: nothing is written)."""
    require_operator(actor, CHANGE)
    learning = Learning.objects.select_for_update().filter(pk=learning_id).first()
    if learning is None:
        raise NotFound(f"No learning {learning_id}.")
    try:
        target = rule(scope.Scope(learning.scope))
    except scope.TransitionRefused as exc:
        raise Conflict(exc.message) from exc
    previous, now = learning.scope, timezone.now()
    learning.scope, learning.scope_changed_at = target.value, now
    fields = ["scope", "scope_changed_at"]
    if target is scope.Scope.ARCHIVED:
        learning.archived_at = now
        fields.append("archived_at")
    if previous == Learning.Scope.ARCHIVED:
        learning.archived_at, learning.restored_at = None, now
        fields += ["archived_at", "restored_at"]
    learning.save(update_fields=fields)
    Embedding.objects.filter(kind="learning", object_id=learning.pk).update(active=target is not scope.Scope.ARCHIVED)
    record(actor=actor, action=action, target=learning, previous=previous, scope=target.value, **data)
    return learning


def _to_archive(current: scope.Scope) -> scope.Scope:
    return scope.transition(current, scope.Scope.ARCHIVED)


@transaction.atomic(durable=True)
def archive(learning_id: int, *, actor: Principal) -> Learning:
    """An operator archives a live learning: it leaves the searches and injection blocks."""
    return _move_by_hand(
        learning_id, actor=actor, action=AuditAction.LEARNING_ARCHIVED, rule=_to_archive, reason="by hand"
    )


@transaction.atomic(durable=True)
def restore(learning_id: int, *, actor: Principal) -> Learning:
    """An operator takes a learning out of the archive, back to `story` (scope.restore_target)."""
    return _move_by_hand(learning_id, actor=actor, action=AuditAction.LEARNING_RESTORED, rule=scope.restore_target)


@transaction.atomic(durable=True)
def demote(learning_id: int, *, actor: Principal) -> Learning:
    """An operator moves a learning one scope down (scope.demotion_target)."""
    return _move_by_hand(learning_id, actor=actor, action=AuditAction.LEARNING_DEMOTED, rule=scope.demotion_target)
