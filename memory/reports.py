"""Reads behind the memory pages: the health overview and one learning's history.

Every helper costs a fixed number of queries whatever the size of the memory (aggregates grouped
in SQL, top lists limited in SQL), so the pages stay as fast with a hundred thousand learnings as
with ten. Series come back zero-filled, oldest day first, in the shape of a KPI report row so that
the fleet pages' sparkline (``governance/kernel/templatetags/kpi_charts.py``) draws them unchanged.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Case, Count, F, FloatField, OuterRef, Q, QuerySet, Subquery, Value, When
from django.db.models.functions import TruncDate
from django.utils import timezone

from governance.kernel.models import AuditEvent
from memory.models import (
    Clarification,
    Learning,
    LearningInjection,
    PromotionProposal,
    ReuseScore,
    ScoringRun,
    SearchCalibration,
    VeilleNote,
)
from memory.scoring import WEIGHT_DOMAINS, WEIGHT_GATE8_GO, WEIGHT_INJECTIONS

WINDOW_DAYS = 30
TOP_REUSED = 10
TOP_NOTE_TAGS = 20
RECENT_SCORING_RUNS = 10
INJECTION_HISTORY = 50
STRONG_IMPACTS = (VeilleNote.Impact.FORT, VeilleNote.Impact.MODERE)


@dataclass(frozen=True)
class ScopeCount:
    scope: str
    label: str
    count: int


@dataclass(frozen=True)
class TagCount:
    tag: str
    count: int


@dataclass(frozen=True)
class ReusedLearning:
    """A learning with the reuse score of its (story, gate, tags_hash) key."""

    learning: Learning
    score: ReuseScore


@dataclass(frozen=True)
class ScoreTerm:
    """One term of the reuse score: a count, its weight, and the points it adds."""

    label: str
    count: int
    weight: Decimal

    @property
    def points(self) -> Decimal:
        return self.count * self.weight


def _window(days: int, today: date | None) -> list[date]:
    today = today or timezone.localdate()
    return [today - timedelta(days=days - 1 - offset) for offset in range(days)]


def daily_counts(
    rows: QuerySet, field: str, label: str, *, days: int = WINDOW_DAYS, today: date | None = None
) -> dict[str, Any]:
    """Rows per local day over the last ``days`` days (today included), one grouped query.

    Days without rows count 0, so the line reads as time. The dict has the keys the KPI sparkline
    reads (``metric_id``, ``trend``, thresholds) plus ``total``."""
    window = _window(days, today)
    since = timezone.make_aware(datetime.combine(window[0], time.min))
    grouped = (
        rows.filter(**{f"{field}__gte": since})
        .annotate(day=TruncDate(field))
        .values_list("day")
        .annotate(n=Count("pk"))
        .order_by()
    )
    per_day = dict(grouped)
    trend = [(day.isoformat(), float(per_day.get(day, 0))) for day in window]
    return {
        "metric_id": label,
        "trend": trend,
        "total": sum(per_day.get(day, 0) for day in window),
        "threshold_warning": None,
        "threshold_critical": None,
    }


def scope_counts() -> list[ScopeCount]:
    """Learnings per scope, every scope listed (zero included), in lifecycle order."""
    counted = dict(Learning.objects.values_list("scope").annotate(n=Count("pk")).order_by())
    return [ScopeCount(value, label, counted.get(value, 0)) for value, label in Learning.Scope.choices]


def top_reused(limit: int = TOP_REUSED) -> list[ReusedLearning]:
    """The most reused learnings: the best scores first, then the learnings of those keys.

    Two queries: scores are keyed by (story, gate, tags_hash), not by learning, and the scores
    table only holds injected keys, so starting from it stays cheap however many learnings exist."""
    scores = list(ReuseScore.objects.order_by("-reuse_score", "-nb_injections", "story", "gate")[:limit])
    if not scores:
        return []
    keys = Q()
    for score in scores:
        keys |= Q(story=score.story, gate=score.gate, tags_hash=score.tags_hash)
    by_key: dict[tuple[str, int, str], list[Learning]] = defaultdict(list)
    for learning in Learning.objects.filter(keys).order_by("-created_at", "-pk"):
        by_key[(learning.story, learning.gate, learning.tags_hash)].append(learning)
    rows = [
        ReusedLearning(learning, score)
        for score in scores
        for learning in by_key[(score.story, score.gate, score.tags_hash)]
    ]
    return rows[:limit]


def note_counts() -> dict[str, int]:
    return VeilleNote.objects.aggregate(
        total=Count("pk"),
        signals=Count("pk", filter=Q(verdict_veille=VeilleNote.Verdict.SIGNAL)),
        strong=Count("pk", filter=Q(impact_pv__in=STRONG_IMPACTS)),
    )


def note_tags(limit: int | None = TOP_NOTE_TAGS) -> list[TagCount]:
    """The tags watch notes carry, the most used first, grouped in SQL (tags are a JSON list).
    ``limit=None`` lists them all (the admin's tag filter)."""
    sql = """
        SELECT tag, count(*) FROM memory_veillenote, jsonb_array_elements_text(tags) AS tag
         GROUP BY tag ORDER BY count(*) DESC, tag LIMIT %s
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [limit])
        return [TagCount(tag, count) for tag, count in cursor.fetchall()]


def clarification_counts() -> dict[str, int]:
    """Stories, versions (four answers each) and answers stored."""
    return Clarification.objects.aggregate(
        stories=Count("story", distinct=True),
        versions=Count("pk", filter=Q(question_idx=1)),
        answers=Count("pk"),
    )


def recent_scoring_runs(limit: int = RECENT_SCORING_RUNS) -> QuerySet[ScoringRun]:
    """The newest runs, each with its ``duration`` (a timedelta)."""
    return ScoringRun.objects.annotate(duration=F("finished_at") - F("started_at")).order_by("-started_at")[:limit]


def health(*, today: date | None = None) -> dict[str, Any]:
    """Everything the memory health page shows, in a fixed number of queries."""
    scopes = scope_counts()
    return {
        "scopes": scopes,
        "total_learnings": sum(item.count for item in scopes),
        "window_days": WINDOW_DAYS,
        "series": [
            daily_counts(LearningInjection.objects.all(), "at", "Injections", today=today),
            daily_counts(
                PromotionProposal.objects.filter(status=PromotionProposal.Status.APPLIED),
                "decided_at",
                "Promotions applied",
                today=today,
            ),
            daily_counts(
                Learning.objects.filter(scope=Learning.Scope.ARCHIVED), "archived_at", "Evictions", today=today
            ),
        ],
        "pending_proposals": PromotionProposal.objects.filter(status=PromotionProposal.Status.PROPOSED).count(),
        "scoring_runs": recent_scoring_runs(),
        "calibrations": SearchCalibration.objects.order_by("kind", "model"),
        "recall_target": settings.MEMORY_SEARCH_RECALL_TARGET,
        "top_reused": top_reused(),
        "notes": note_counts(),
        "note_tags": note_tags(),
        "clarifications": clarification_counts(),
    }


def score_of(learning: Learning) -> ReuseScore | None:
    """The score of the learning's key; None means never injected, read as 0.0 (seed Écart 9)."""
    return ReuseScore.objects.filter(story=learning.story, gate=learning.gate, tags_hash=learning.tags_hash).first()


def score_terms(score: ReuseScore | None) -> list[ScoreTerm]:
    """The breakdown of a score into the three weighted terms of ``memory.scoring``."""
    if score is None:
        return []
    return [
        ScoreTerm("Injections", score.nb_injections, WEIGHT_INJECTIONS),
        ScoreTerm("Stories with a gate-8 GO after an injection", score.nb_stories_gate8_go, WEIGHT_GATE8_GO),
        ScoreTerm("Domains injected into", score.nb_domains, WEIGHT_DOMAINS),
    ]


def scope_events(learning: Learning) -> QuerySet[AuditEvent]:
    """The audit rows about this learning (promotions, archiving), oldest first."""
    return AuditEvent.objects.filter(target_type=Learning._meta.label_lower, target_id=str(learning.pk)).order_by(
        "at", "pk"
    )


def learning_history(learning: Learning) -> dict[str, Any]:
    """The detail page of one learning: its score breakdown, injections and scope history."""
    score = score_of(learning)
    return {
        "score": score,
        "score_terms": score_terms(score),
        "injections": learning.injections.order_by("-at", "-pk")[:INJECTION_HISTORY],
        "injection_count": learning.injections.count(),
        "injection_limit": INJECTION_HISTORY,
        "scope_events": scope_events(learning),
        "proposals": learning.proposals.select_related("review_item").order_by("created_at", "pk"),
    }


def browse_learnings(
    *,
    scope: str | None = None,
    domain: str | None = None,
    min_score: Decimal | None = None,
    text: str | None = None,
    similarity: dict[int, float] | None = None,
) -> QuerySet[Learning]:
    """Learnings with their reuse score (``score``, None when never scored), best score first, for
    the learnings page. ``similarity`` (a semantic search's hits: id -> cosine similarity) keeps
    only those rows, annotated with theirs and nearest first."""
    score = ReuseScore.objects.filter(story=OuterRef("story"), gate=OuterRef("gate"), tags_hash=OuterRef("tags_hash"))
    rows = Learning.objects.annotate(score=Subquery(score.values("reuse_score")[:1]))
    if scope:
        rows = rows.filter(scope=scope)
    if domain:
        rows = rows.filter(domain=domain)
    if min_score is not None:
        rows = rows.filter(score__gte=min_score)
    if text:
        rows = rows.filter(text__icontains=text)
    if similarity is not None:
        nearness = [When(pk=pk, then=Value(value)) for pk, value in similarity.items()]
        rows = rows.filter(pk__in=similarity).annotate(similarity=Case(*nearness, output_field=FloatField()))
        return rows.order_by("-similarity", "-pk")
    return rows.order_by(F("score").desc(nulls_last=True), "-pk")
