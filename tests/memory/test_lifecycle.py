"""The learnings lifecycle in the database: promotions proposed, applied or reviewed; eviction
to ARCHIVED in one transaction; nothing deleted (seed 004 section 2.4)."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from governance.kernel.models import AuditEvent
from governance.kernel.principals import Principal
from governance.reviews import services as reviews
from governance.reviews.models import ReviewItem
from memory import lifecycle
from memory.models import Embedding, Learning, PromotionProposal, ReuseScore
from tests.factories.memory import EmbeddingFactory, LearningFactory, LearningInjectionFactory
from tests.support.concurrency import at_once

TODAY = date(2026, 11, 21)


def learning(*, scope: str = "story", created: date | None = TODAY, legacy_date: date | None = None, **kw) -> Learning:
    return LearningFactory.create(scope=scope, date_created=created, date=legacy_date, **({"tags": ["#api"]} | kw))


def scored(item: Learning, value: str) -> None:
    ReuseScore.objects.update_or_create(
        story=item.story,
        gate=item.gate,
        tags_hash=item.tags_hash,
        defaults={
            "nb_injections": 1,
            "nb_stories_gate8_go": 0,
            "nb_domains": 1,
            "reuse_score": Decimal(value),
            "computed_at": timezone.now(),
        },
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("scope", "score", "target"),
    [
        ("story", "0.29", None),
        ("story", "0.30", "domain"),
        ("story", "0.80", "domain"),
        ("domain", "0.59", None),
        ("domain", "0.60", "global"),
        ("global", "5.0", None),
    ],
)
def test_tc_nom_09_promotions_follow_the_thresholds_in_auto_mode(scope, score, target):
    item = learning(scope=scope)
    scored(item, score)

    report = lifecycle.propose_promotions(mode="auto")

    item.refresh_from_db()
    assert item.scope == (target or scope)
    assert report.applied == (1 if target else 0)


@pytest.mark.django_db
def test_a_learning_never_scored_counts_as_zero_and_stays():
    item = learning()
    assert lifecycle.propose_promotions(mode="auto").proposed == 0
    item.refresh_from_db()
    assert item.scope == "story"


@pytest.mark.django_db
def test_review_mode_sends_proposals_to_the_inbox_and_a_reviewer_applies_them(reviewer):
    item = learning()
    scored(item, "0.4")

    report = lifecycle.propose_promotions(mode="review")

    assert report.proposed == 1
    proposal = PromotionProposal.objects.get()
    assert proposal.review_item.kind == "learning_promotion"
    item.refresh_from_db()
    assert item.scope == "story"  # not before a human says so
    assert lifecycle.propose_promotions(mode="review").proposed == 0  # one open proposal per step

    reviews.decide(proposal.review_item_id, actor=Principal(user=reviewer), decision="approve")

    item.refresh_from_db()
    proposal.refresh_from_db()
    assert (item.scope, proposal.status, proposal.decided_by) == ("domain", "applied", "user:rita")
    assert AuditEvent.objects.filter(action="learning.promoted", actor="user:rita").exists()


@pytest.mark.django_db(transaction=True)
def test_two_promotion_runs_at_once_open_one_proposal_per_learning():
    """A promote task delivered twice runs beside itself: each learning still gets one proposal
    and one inbox item, and neither run fails."""
    items = [learning(story=f"PD-{n}") for n in range(20)]
    for item in items:
        scored(item, "0.4")
    reports, failures = at_once(lambda: lifecycle.propose_promotions(mode="review"), 2, timeout=60)

    assert failures == []
    assert sum(report.proposed for report in reports) == 20
    assert PromotionProposal.objects.count() == 20
    assert ReviewItem.objects.filter(kind="learning_promotion").count() == 20


@pytest.mark.django_db
def test_a_rejected_proposal_leaves_the_learning(reviewer):
    item = learning()
    scored(item, "0.4")
    lifecycle.propose_promotions(mode="review")
    proposal = PromotionProposal.objects.get()

    reviews.decide(proposal.review_item_id, actor=Principal(user=reviewer), decision="reject")

    item.refresh_from_db()
    assert item.scope == "story"
    assert PromotionProposal.objects.get().status == "rejected"


@pytest.mark.django_db
def test_tc_err_11_an_approval_arriving_after_archiving_is_refused(reviewer):
    item = learning()
    scored(item, "0.4")
    lifecycle.propose_promotions(mode="review")
    Learning.objects.filter(pk=item.pk).update(scope="archived")
    proposal = PromotionProposal.objects.get()

    reviews.decide(proposal.review_item_id, actor=Principal(user=reviewer), decision="approve")

    item.refresh_from_db()
    assert item.scope == "archived"
    assert PromotionProposal.objects.get().status == "refused"


@pytest.mark.django_db
@pytest.mark.parametrize(("age", "evicted"), [(56, False), (57, True)])
def test_tc_neg_03_the_56_57_day_boundary(age, evicted):
    item = learning(created=TODAY - timedelta(days=age))
    lifecycle.evict(today=TODAY)
    item.refresh_from_db()
    assert (item.scope == "archived") is evicted


@pytest.mark.django_db
def test_tc_nom_10_eviction_matrix_archives_only_old_and_never_injected():
    old = TODAY - timedelta(days=90)
    a = learning(created=old, story="A")
    b = learning(created=old, story="B")
    learning(created=TODAY - timedelta(days=3), story="C")
    d = learning(created=TODAY - timedelta(days=3), story="D")
    for injected in (b, d):
        LearningInjectionFactory(learning=injected, story="PD-9", domain="x")

    report = lifecycle.evict(today=TODAY)

    assert report.archived == 1
    assert {x.story: x.scope for x in Learning.objects.all()} == {
        "A": "archived",
        "B": "story",
        "C": "story",
        "D": "story",
    }
    assert Learning.objects.count() == 4  # archived, never deleted
    assert AuditEvent.objects.filter(action="learning.archived", target_id=str(a.pk)).exists()


@pytest.mark.django_db
def test_the_age_falls_back_to_the_legacy_date_and_undated_learnings_stay():
    legacy = learning(created=None, legacy_date=TODAY - timedelta(days=100), story="legacy")
    undated = learning(created=None, legacy_date=None, story="undated")
    lifecycle.evict(today=TODAY)
    legacy.refresh_from_db()
    undated.refresh_from_db()
    assert (legacy.scope, undated.scope) == ("archived", "story")


@pytest.mark.django_db
def test_tc_nom_11_archived_learnings_leave_the_active_vector_index():
    item = learning(created=TODAY - timedelta(days=60))
    EmbeddingFactory(kind="learning", object_id=item.pk)
    lifecycle.evict(today=TODAY)
    assert Embedding.objects.get().active is False


@pytest.mark.django_db
def test_tc_nom_08_migration_is_idempotent():
    learning()
    assert lifecycle.migrate_scopes().migrated == 1
    assert lifecycle.migrate_scopes().migrated == 0


@pytest.mark.django_db
def test_the_commands_print_what_they_changed():
    item = learning(created=TODAY - timedelta(days=365))
    out = StringIO()
    call_command("learnings_lifecycle", "--evict", stdout=out)
    assert "archived: 1" in out.getvalue()
    call_command("compute_reuse_scores", "--full", stdout=out)
    assert "[scoring] full" in out.getvalue()
    item.refresh_from_db()
    assert item.scope == "archived"


@pytest.mark.django_db
def test_promotion_items_appear_in_the_reviewer_inbox(client, reviewer):
    item = learning()
    scored(item, "0.4")
    lifecycle.propose_promotions(mode="review")
    client.force_login(reviewer)
    html = client.get("/inbox/").content.decode()
    assert "Promote a story learning of PD-1 to domain" in html
    assert ReviewItem.objects.filter(kind="learning_promotion", status="pending").count() == 1


@pytest.mark.django_db
def test_tc_err_10_a_learning_without_a_score_row_is_excluded_and_reported(caplog):
    import logging

    unscored = learning(story="PD-77")
    scored_one = learning(story="PD-78", tags=["#other"])
    scored(scored_one, "0.4")

    with caplog.at_level(logging.INFO, logger="memory.lifecycle"):
        report = lifecycle.propose_promotions(mode="auto")

    unscored.refresh_from_db()
    assert unscored.scope == "story"
    assert report.applied == 1
    assert "1 learning(s) without a reuse score" in caplog.text
