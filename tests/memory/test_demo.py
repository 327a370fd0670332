"""The memory demo: a few hundred learnings through the services, a month of reuse, the real
scoring and lifecycle runs over it, and nothing created twice."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db.models import Count
from django.urls import reverse
from django.utils import timezone

from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM
from governance.reviews.models import ReviewItem
from memory import demo
from memory.learnings import create_learning
from memory.models import (
    Clarification,
    GateResult,
    Learning,
    LearningInjection,
    PromotionProposal,
    ReuseScore,
    ScoringRun,
    VeilleNote,
)
from memory.tags import compute_tags_hash
from tests.factories.governance import UserFactory

TABLES = (Learning, LearningInjection, GateResult, ReuseScore, PromotionProposal, VeilleNote, Clarification)


def load() -> str:
    out = StringIO()
    demo.load(out)
    return out.getvalue()


def counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in (*TABLES, ScoringRun, ReviewItem, AuditEvent)}


@pytest.fixture
def loaded(db) -> str:
    return load()


def test_the_demo_creates_a_few_hundred_learnings_over_several_domains_projects_and_stories(loaded):
    learnings = Learning.objects.all()

    assert learnings.count() == demo.LEARNINGS
    assert learnings.values("domain").distinct().count() == 4
    assert learnings.values("project").distinct().count() >= 6
    assert learnings.values("story").distinct().count() >= 30
    assert learnings.values("text").distinct().count() >= 100  # generated, not one text repeated


def test_demo_learnings_go_through_the_service(loaded):
    for item in Learning.objects.all():
        assert item.tags_hash == compute_tags_hash(item.tags)
        assert item.tags == sorted(item.tags)
        assert item.scope_migrated_at is not None
    assert set(Learning.objects.values_list("created_by", flat=True)) == {"system"}  # no demo agents loaded


def test_loading_schedules_the_embeddings_after_commit(db, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        load()

    assert len(callbacks) >= demo.LEARNINGS  # one per learning, plus notes and clarifications


def test_injections_are_spread_over_the_last_thirty_days(loaded):
    injections = LearningInjection.objects.all()
    oldest = timezone.now() - timedelta(days=demo.WINDOW_DAYS)

    assert injections.count() >= 100
    assert not injections.filter(at__lt=oldest).exists()
    assert len(set(injections.dates("at", "day"))) >= 20
    assert injections.values("domain").distinct().count() == 4
    for injection in injections.select_related("learning"):
        assert timezone.localdate(injection.at) >= injection.learning.date_created


def test_some_stories_pass_gate_eight_after_receiving_learnings(loaded):
    scores = ReuseScore.objects.all()

    assert GateResult.objects.filter(gate=8, verdict="GO").count() >= 10
    assert GateResult.objects.filter(gate=8, verdict="NO_GO").exists()
    assert scores.filter(nb_stories_gate8_go__gt=0).count() >= 10
    assert scores.filter(nb_domains__gt=1).exists()


def test_the_lifecycle_ran_promotions_waiting_in_the_inbox_and_stale_learnings_archived(loaded):
    by_scope = dict(Learning.objects.values_list("scope").annotate(n=Count("pk")).order_by())
    waiting = PromotionProposal.objects.filter(status="proposed")

    assert by_scope["global"] >= demo.COHORTS["global"]
    assert by_scope["domain"] >= demo.COHORTS["domain"]
    assert by_scope["archived"] >= 20
    assert PromotionProposal.objects.filter(status="applied").count() >= 2 * demo.COHORTS["global"]
    assert 10 <= waiting.count() <= 40
    pending = ReviewItem.objects.filter(kind="learning_promotion", status="pending")
    assert set(pending.values_list("pk", flat=True)) == set(waiting.values_list("review_item_id", flat=True))
    assert not Learning.objects.filter(scope="archived", injections__isnull=False).exists()
    cutoff = timezone.localdate() - timedelta(days=56)
    assert not Learning.objects.filter(scope="archived", date_created__gte=cutoff).exists()
    assert ScoringRun.objects.filter(mode="full").exists()
    assert ScoringRun.objects.filter(mode="incremental").exists()


def test_watch_notes_and_clarifications_go_through_their_services(loaded):
    assert VeilleNote.objects.count() == len(demo.NOTES)
    assert set(VeilleNote.objects.values_list("impact_pv", flat=True)) == {"fort", "modere", "faible", "aucun"}
    assert AuditEvent.objects.filter(action="veille.indexed").count() == len(demo.NOTES)
    assert Clarification.objects.filter(question_idx=1).count() == len(demo.CLARIFICATIONS)
    assert list(Clarification.objects.filter(story="PD-223", question_idx=1).values_list("version", flat=True)) == [
        2,
        1,
    ]
    assert AuditEvent.objects.filter(action="clarifications.persisted").count() == len(demo.CLARIFICATIONS)


def test_the_demo_prints_one_summary_line(loaded):
    assert loaded.count("\n") == 1
    assert loaded.startswith(f"Demo memory: {demo.LEARNINGS} learnings in 4 domains, ")
    waiting = PromotionProposal.objects.filter(status="proposed").count()
    assert f", {waiting} waiting for review, " in loaded


def test_loading_twice_creates_nothing_more(loaded):
    before = counts()

    output = load()

    assert output == ""
    assert counts() == before


def test_nothing_is_created_when_learnings_already_exist(db):
    create_learning(actor=SYSTEM, story="PD-1", gate=1, domain="seo", project="shop", tags=[], text="Mine.")

    assert load() == ""
    assert Learning.objects.count() == 1
    assert not LearningInjection.objects.exists()
    assert not VeilleNote.objects.exists()


def test_load_demo_loads_the_memory_and_its_pages_show_it(client, db):
    out = StringIO()
    call_command("load_demo", stdout=out)  # the demo loads only into an empty database
    client.force_login(UserFactory(username="alice", roles=["Admin"]))

    assert "Demo memory: " in out.getvalue()
    authors = set(Learning.objects.values_list("created_by", flat=True))
    assert {"agent:agent.seo.vlevel", "agent:agent.rag.indexer", "system"} <= authors
    health = client.get(reverse("memory:memory-overview")).content.decode()
    assert health.count("<svg") == 3
    top = ReuseScore.objects.order_by("-reuse_score").first()
    best = Learning.objects.filter(story=top.story, gate=top.gate, tags_hash=top.tags_hash).first()
    assert reverse("memory:learning-detail", args=[best.pk]) in health
    assert client.get(reverse("memory:learning-detail", args=[best.pk])).status_code == 200
    # Every proposal waits in the inbox with its box for bulk approval, one page of them at a time.
    proposed = PromotionProposal.objects.filter(status="proposed").count()
    boxes, page = 0, 1
    while boxes < proposed and page <= proposed:
        inbox = client.get(reverse("reviews:inbox"), {"kind": "learning_promotion", "page": page}).content.decode()
        boxes, page = boxes + inbox.count('form="bulk-selected"'), page + 1
    assert boxes == proposed
