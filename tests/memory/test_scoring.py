"""Reuse scores in SQL (seed 004 section 2.3): the raw weighted sum, keyed by (story, gate,
tags_hash), incremental runs equal to full ones."""

from __future__ import annotations

import random
import threading
from datetime import timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from governance.kernel.principals import SYSTEM
from memory.learnings import record_gate_result
from memory.models import GateResult, Learning, LearningInjection, ReuseScore, ScoringRun
from memory.scoring import compute_reuse_score, compute_reuse_scores
from memory.tasks import full_scoring
from tests.factories.memory import GateResultFactory, LearningFactory, LearningInjectionFactory

T0 = timezone.now() - timedelta(days=10)


def learning(story: str = "PD-1", gate: int = 3, tags=("#api",), domain: str = "tooling") -> Learning:
    return LearningFactory.create(
        story=story, gate=gate, domain=domain, project="p", tags=list(tags), text=f"learned in {story}"
    )


def inject(item: Learning, story: str, domain: str, at) -> LearningInjection:
    return LearningInjectionFactory.create(learning=item, story=story, domain=domain, at=at)


def go(story: str, at, gate: int = 8, verdict: str = "GO") -> GateResult:
    return GateResultFactory.create(story=story, gate=gate, verdict=verdict, at=at)


def score(item: Learning) -> ReuseScore:
    return ReuseScore.objects.get(story=item.story, gate=item.gate, tags_hash=item.tags_hash)


def test_tc_nom_05_the_formula_gives_1_8_and_1_0():
    assert compute_reuse_score(3, 1, 1) == Decimal("1.8")
    assert compute_reuse_score(1, 1, 1) == Decimal("1.0")


@pytest.mark.django_db
def test_tc_nom_05_scores_1_8_and_1_0_from_the_database():
    l1, l2 = learning("PD-1"), learning("PD-2", tags=("#db",))
    for n in range(3):
        inject(l1, f"PD-1{n}", "tooling", T0 + timedelta(hours=n))
    go("PD-10", T0 + timedelta(days=1))
    inject(l2, "PD-20", "tooling", T0)
    go("PD-20", T0 + timedelta(days=1))

    compute_reuse_scores(full=True)

    assert score(l1).reuse_score == Decimal("1.8")
    assert (score(l1).nb_injections, score(l1).nb_stories_gate8_go, score(l1).nb_domains) == (3, 1, 1)
    assert score(l2).reuse_score == Decimal("1.0")


@pytest.mark.django_db
def test_a_go_before_the_injection_or_at_another_gate_does_not_count():
    item = learning()
    inject(item, "PD-30", "tooling", T0 + timedelta(days=2))
    go("PD-30", T0 + timedelta(days=1))  # before the injection
    go("PD-30", T0 + timedelta(days=3), gate=7)  # another gate
    go("PD-30", T0 + timedelta(days=3), verdict="NO_GO")

    compute_reuse_scores(full=True)

    assert score(item).nb_stories_gate8_go == 0
    assert score(item).reuse_score == Decimal("0.6")  # 0.4 injection + 0.2 domain


@pytest.mark.django_db
def test_distinct_stories_and_domains_count_once():
    """One story's repeated calls are one use (issue 34): three blocks served to PD-40 count once."""
    item = learning()
    for domain in ("a", "a", "b"):
        inject(item, "PD-40", domain, T0)
    go("PD-40", T0 + timedelta(days=1))
    go("PD-40", T0 + timedelta(days=2))

    compute_reuse_scores(full=True)

    assert (score(item).nb_injections, score(item).nb_stories_gate8_go, score(item).nb_domains) == (1, 1, 2)
    assert score(item).reuse_score == Decimal("1.2")


@pytest.mark.django_db
def test_a_learning_never_injected_gets_no_row():
    learning()
    compute_reuse_scores(full=True)
    assert not ReuseScore.objects.exists()


@pytest.mark.django_db
def test_learnings_sharing_a_key_share_a_score():
    first, second = learning("PD-5", tags=("#a", "#b")), learning("PD-5", tags=("B", "a"))
    inject(first, "PD-50", "x", T0)
    inject(second, "PD-51", "y", T0)
    compute_reuse_scores(full=True)
    assert ReuseScore.objects.count() == 1
    assert score(first).nb_injections == 2


@pytest.mark.django_db
def test_an_incremental_run_touches_only_what_changed_and_equals_a_full_run():
    rng = random.Random(4)
    items = [learning(f"PD-{n}", gate=rng.randint(1, 8), tags=(f"#t{n % 7}",)) for n in range(40)]
    for n in range(200):
        inject(rng.choice(items), f"PD-{100 + rng.randint(0, 30)}", rng.choice("abc"), T0 + timedelta(hours=n))
    compute_reuse_scores()
    assert ScoringRun.objects.first().mode == "full"  # nothing to be incremental from

    touched = rng.sample(items, 3)
    for item in touched:
        inject(item, "PD-999", "d", T0 + timedelta(days=9))
    go("PD-999", T0 + timedelta(days=9, hours=1))
    outcome = compute_reuse_scores()

    assert outcome.mode == "incremental"
    assert outcome.keys_updated == len({(i.story, i.gate, i.tags_hash) for i in touched})
    incremental = {(s.story, s.gate, s.tags_hash): s.reuse_score for s in ReuseScore.objects.all()}
    compute_reuse_scores(full=True)
    full = {(s.story, s.gate, s.tags_hash): s.reuse_score for s in ReuseScore.objects.all()}
    assert incremental == full


@pytest.mark.django_db
def test_a_late_go_rescores_the_stories_injected_before_it():
    item = learning()
    inject(item, "PD-60", "a", T0)
    compute_reuse_scores()
    assert score(item).reuse_score == Decimal("0.6")

    go("PD-60", T0 + timedelta(days=1))
    outcome = compute_reuse_scores()

    assert outcome.keys_updated == 1
    assert score(item).reuse_score == Decimal("1.0")


def scores() -> dict[tuple, Decimal]:
    return {(s.story, s.gate, s.tags_hash): s.reuse_score for s in ReuseScore.objects.all()}


@pytest.mark.django_db(transaction=True)
def test_a_write_committing_after_a_higher_id_is_not_missed_by_incremental_runs():
    """Ids are handed out before commit. Gate result A gets its id, then B (a higher id) commits
    first: a run that starts meanwhile waits for A instead of taking B's id as its watermark, and
    A's GO counts without a full run."""
    early, late = learning("PD-1"), learning("PD-2", tags=("#db",))
    inject(early, "PD-70", "a", T0)
    inject(late, "PD-71", "a", T0)
    compute_reuse_scores()
    a_written, release_a, run_done = threading.Event(), threading.Event(), threading.Event()

    def writer_a() -> None:
        try:
            with transaction.atomic():
                record_gate_result(actor=SYSTEM, story="PD-70", gate=8, verdict="GO")
                a_written.set()
                release_a.wait(timeout=30)
        finally:
            connection.close()

    def scoring_run() -> None:
        try:
            compute_reuse_scores()
        finally:
            run_done.set()
            connection.close()

    a = threading.Thread(target=writer_a)
    a.start()
    assert a_written.wait(timeout=10)
    record_gate_result(actor=SYSTEM, story="PD-71", gate=8, verdict="GO")  # B: a higher id, committed
    run = threading.Thread(target=scoring_run)
    run.start()
    waited = not run_done.wait(timeout=1)
    release_a.set()
    a.join(timeout=30)
    run.join(timeout=30)
    compute_reuse_scores()  # the next incremental run

    assert waited, "the run read its watermark while a gate result was being written"
    incremental = scores()
    compute_reuse_scores(full=True)
    assert incremental == scores()
    assert score(early).nb_stories_gate8_go == 1


@pytest.fixture
def maintained(db) -> dict[str, Learning]:
    """Three keys scored by a first run, then tampered with as a lost update or a bug would."""
    kept, stale, gone = learning("PD-1"), learning("PD-2", tags=("#db",)), learning("PD-3", tags=("#ui",))
    for item in (kept, stale, gone):
        inject(item, "PD-10", "tooling", T0)
    inject(kept, "PD-11", "seo", T0)
    compute_reuse_scores(full=True)
    ReuseScore.objects.filter(story="PD-1").update(nb_injections=7, reuse_score=Decimal("9.9"))
    ReuseScore.objects.filter(story="PD-2").delete()
    ReuseScore.objects.create(
        story="PD-404",
        gate=3,
        tags_hash="f" * 64,
        nb_injections=1,
        nb_stories_gate8_go=0,
        nb_domains=1,
        reuse_score=Decimal("0.6"),
        computed_at=T0,
    )
    return {"kept": kept, "stale": stale, "gone": gone}


def test_the_full_run_puts_tampered_scores_right_and_counts_what_it_corrected(maintained, caplog):
    outcome = compute_reuse_scores(full=True)

    assert (score(maintained["kept"]).nb_injections, score(maintained["kept"]).reuse_score) == (2, Decimal("1.2"))
    assert score(maintained["stale"]).reuse_score == Decimal("0.6")
    assert not ReuseScore.objects.filter(story="PD-404").exists()
    run = ScoringRun.objects.first()
    assert (run.mode, run.keys_corrected, run.keys_created, run.keys_removed) == ("full", 1, 1, 1)
    assert (outcome.corrections.corrected, outcome.corrections.created, outcome.corrections.removed) == (1, 1, 1)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and r.name == "memory.scoring"]
    assert warnings == ["[scoring] the full run corrected 3 key(s): 1 corrected, 1 created, 1 removed"]


def test_a_full_run_over_right_scores_corrects_nothing_and_warns_nothing(maintained, caplog):
    compute_reuse_scores(full=True)
    caplog.clear()

    compute_reuse_scores(full=True)

    run = ScoringRun.objects.first()
    assert (run.keys_corrected, run.keys_created, run.keys_removed, run.keys_updated) == (0, 0, 0, 3)
    assert not [r for r in caplog.records if r.levelname == "WARNING"]


def test_the_command_prints_the_corrections_of_a_full_run(maintained):
    out = StringIO()

    call_command("compute_reuse_scores", "--full", stdout=out)

    assert "[scoring] corrections: 1 corrected, 1 created, 1 removed" in out.getvalue()


def test_the_weekly_task_runs_a_full_run_and_is_scheduled_every_seven_days(maintained):
    task = PeriodicTask.objects.get(name="memory weekly full scoring")

    full_scoring.apply()

    assert (task.task, task.enabled, task.interval.every, task.interval.period) == (
        "memory.full_scoring",
        True,
        7 * 24 * 3600,
        "seconds",
    )
    assert ScoringRun.objects.first().keys_corrected == 1


def test_a_full_run_rewrites_only_the_keys_it_corrects(maintained):
    compute_reuse_scores(full=True)
    before = dict(ReuseScore.objects.values_list("story", "computed_at"))
    ReuseScore.objects.filter(story="PD-1").update(reuse_score=Decimal("5.0"))  # the counts are right

    compute_reuse_scores(full=True)

    after = dict(ReuseScore.objects.values_list("story", "computed_at"))
    assert score(maintained["kept"]).reuse_score == Decimal("1.2")
    assert after["PD-1"] > before["PD-1"]
    assert (after["PD-2"], after["PD-3"]) == (before["PD-2"], before["PD-3"])  # right already: untouched
    run = ScoringRun.objects.first()
    assert (run.keys_corrected, run.keys_created, run.keys_removed, run.keys_updated) == (1, 0, 0, 3)


def test_a_full_run_gives_the_callers_transaction_its_planner_back(maintained):
    planner = "SELECT current_setting('enable_nestloop'), current_setting('work_mem')"
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(planner)
        before = cursor.fetchone()
        compute_reuse_scores(full=True)
        cursor.execute(planner)
        assert cursor.fetchone() == before


@pytest.mark.django_db
def test_an_injection_below_the_similarity_floor_does_not_count(settings):
    """A learning served because little else matched is no evidence of reuse (issue 34): below
    MEMORY_REUSE_SIMILARITY_FLOOR an injection counts nowhere; one from before the similarity was
    kept (NULL) counts as it always did. Incremental and full runs agree."""
    settings.MEMORY_REUSE_SIMILARITY_FLOOR = 0.3
    item = learning()
    LearningInjectionFactory.create(learning=item, story="PD-50", domain="a", at=T0, similarity=0.12)
    LearningInjectionFactory.create(learning=item, story="PD-51", domain="b", at=T0, similarity=0.0)
    go("PD-50", T0 + timedelta(days=1))

    compute_reuse_scores()

    assert not ReuseScore.objects.filter(story=item.story).exclude(nb_injections=0).exists()

    LearningInjectionFactory.create(learning=item, story="PD-52", domain="c", at=T0, similarity=0.31)
    LearningInjectionFactory.create(learning=item, story="PD-53", domain="c", at=T0, similarity=None)
    compute_reuse_scores()
    incremental = (score(item).nb_injections, score(item).nb_stories_gate8_go, score(item).nb_domains)
    compute_reuse_scores(full=True)

    assert incremental == (score(item).nb_injections, score(item).nb_stories_gate8_go, score(item).nb_domains)
    assert incremental == (2, 0, 1)
    assert score(item).reuse_score == Decimal("1.0")
