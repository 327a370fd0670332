"""Reads behind the subject pages: the list of subjects with their counts, and everything one
subject's page shows (conversations, facts by kind, emotions, personality).

Read-only; writes go through ``memory.subjects.services``. Each helper costs a fixed number of queries
whatever the number of subjects or rows: the list's counts and last update are correlated
subqueries of one SELECT, and the page reads each table once.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, Exists, F, Max, Model, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from memory.models import (
    Conversation,
    EmotionEvent,
    EmotionState,
    LifeEvent,
    PersonalityState,
    Preference,
    ProfileFact,
    Relationship,
    Subject,
    SubjectMemory,
)
from memory.subjects import emotions, personality
from memory.subjects.charts import EmotionPoint, TraitSnapshotPoint, emotion_chart, trait_chart
from memory.subjects.documents import TRAITS
from memory.subjects.services import FACT_KINDS

MAX_LISTED = 100
FACT_LABELS = {"preference": "Preferences", "event": "Events", "relationship": "Relationships"}
MOMENT = "%Y-%m-%d %H:%M"


# --- The list ------------------------------------------------------------------------------------


def _count(model: type[Model]) -> Coalesce:
    rows = model.objects.filter(subject=OuterRef("pk")).order_by().values("subject").annotate(n=Count("pk"))
    return Coalesce(Subquery(rows.values("n")), 0)


def _latest(model: type[Model], field: str) -> Subquery:
    rows = model.objects.filter(subject=OuterRef("pk")).order_by().values("subject").annotate(at=Max(field))
    return Subquery(rows.values("at"))


def listed(query: str = "") -> QuerySet[Subject]:
    """Subjects matching ``query`` (in the key, or in the profile's name) with their counts, the
    current emotion, and the last update: the latest moment any of their documents speaks of
    (PostgreSQL's GREATEST skips the NULLs of documents a subject does not have)."""
    subjects = Subject.objects.annotate(
        conversation_count=_count(Conversation),
        fact_count=_count(ProfileFact) + _count(Preference) + _count(LifeEvent) + _count(Relationship),
        memory_count=_count(SubjectMemory),
        current_emotion=F("emotion__current_emotion"),
        current_intensity=F("emotion__current_intensity"),
        last_update=Greatest(
            F("emotion__last_updated"),
            F("personality__last_updated"),
            _latest(Conversation, "end_timestamp"),
            _latest(SubjectMemory, "timestamp"),
            _latest(EmotionEvent, "timestamp"),
        ),
    ).order_by("key")
    query = query.strip()
    if query:
        named = ProfileFact.objects.filter(subject=OuterRef("pk"), field="name", value__icontains=query)
        subjects = subjects.filter(Q(key__icontains=query) | Q(Exists(named)))
    return subjects


def subject_list(query: str = "") -> dict[str, Any]:
    subjects = listed(query)
    return {"subjects": list(subjects[:MAX_LISTED]), "total": subjects.count(), "limit": MAX_LISTED}


# --- One subject ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class FactRow:
    """A preference, event or relationship with its per-subject id (``pref_001``): the id is what
    URLs, the audit trail and ``subjects.correct_fact`` name it by."""

    kind: str
    id: str
    fact: Model

    @classmethod
    def of(cls, kind: str, fact: Model) -> FactRow:
        return cls(kind, getattr(fact, FACT_KINDS[kind][1]), fact)

    @property
    def summary(self) -> str:
        """What the fact says, in a few words, for a confirmation question."""
        fact: Any = self.fact
        if self.kind == "preference":
            return f"{fact.category}: {fact.item}"
        if self.kind == "event":
            return fact.description if len(fact.description) <= 80 else fact.description[:79] + "…"
        return f"{fact.entity_1} {fact.relation_type} {fact.entity_2}"


def fact_rows(subject: Subject) -> dict[str, list[FactRow]]:
    """Each kind's facts in id order, one query per kind."""
    rows = {}
    for kind, (model, id_field, _) in FACT_KINDS.items():
        rows[kind] = [FactRow.of(kind, fact) for fact in model.objects.filter(subject=subject).order_by(id_field)]
    return rows


@dataclass(frozen=True)
class TransitionRow:
    """A move the subject made, how often, how long the emotion before it lasted on average, and
    what the realistic-transition matrix says of that move today (it may have been tuned since)."""

    from_emotion: str
    to_emotion: str
    count: int
    duration: str
    probability: float | None
    allowed: bool


def duration(seconds: float) -> str:
    """120 -> "2 min", 4500 -> "1 h 15 min", 42 -> "42 s"."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, _ = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min"


def _moment(at: datetime) -> str:
    return timezone.localtime(at).strftime(MOMENT)


def _emotions(subject: Subject) -> dict[str, Any]:
    state = EmotionState.objects.filter(subject=subject).first()
    history = list(subject.emotion_history.all())
    matrix = emotions.matrix()
    transitions = []
    for t in subject.transitions.order_by("-count", "from_emotion", "to_emotion"):
        verdict = emotions.allowed(matrix, t.from_emotion, t.to_emotion)
        transitions.append(
            TransitionRow(
                t.from_emotion,
                t.to_emotion,
                t.count,
                duration(t.avg_duration_seconds),
                verdict.probability,
                verdict.allowed,
            )
        )
    kept: dict[str, list[float]] = defaultdict(list)
    for event in history:
        kept[event.emotion].append(event.intensity)
    per_emotion = sorted(
        ({"emotion": name, "count": len(values), "mean": sum(values) / len(values)} for name, values in kept.items()),
        key=lambda row: (-row["count"], row["emotion"]),
    )
    stats = None
    if state is not None:
        total = state.total_emotions_recorded
        frequent = max(state.counts.items(), key=lambda item: (item[1], item[0]), default=(None, 0))
        stats = {
            "total": total,
            "transitions": state.total_transitions,
            "mean_intensity": state.intensity_sum / total if total else None,
            "most_frequent": frequent[0],
            "most_frequent_count": frequent[1],
            "kept": len(history),
            "max_history": state.max_history,
        }
    points = [EmotionPoint(_moment(e.timestamp), e.emotion, e.intensity, e.context) for e in history]
    return {
        "emotion": state,
        "emotion_history": history,
        "emotion_chart": emotion_chart(points),
        "emotion_stats": stats,
        "per_emotion": per_emotion,
        "transitions": transitions,
        "threshold": emotions.THRESHOLD,
    }


def _personality(subject: Subject) -> dict[str, Any]:
    state = PersonalityState.objects.filter(subject=subject).first()
    snapshots = list(subject.trait_history.all())
    traits = state.traits if state else personality.DEFAULT_TRAITS
    pending = state.pending_changes if state else {}
    rows = [
        {"trait": t, "value": traits[t], "default": personality.DEFAULT_TRAITS[t], "pending": pending.get(t)}
        for t in TRAITS
    ]
    points = [TraitSnapshotPoint(_moment(s.timestamp), s.traits, s.reason) for s in snapshots]
    return {
        "personality": state,
        "traits": rows,
        "trait_snapshots": snapshots,
        "trait_chart": trait_chart(points, TRAITS),
        "system_prompt": personality.system_prompt(traits),
    }


def subject_page(subject: Subject) -> dict[str, Any]:
    """Everything the subject's page shows, apart from what depends on the viewer's permissions."""
    return {
        "subject": subject,
        "conversations": list(subject.conversations.order_by("start_timestamp", "pk")),
        "profile": list(subject.profile.order_by("field")),
        "facts": fact_rows(subject),
        "memory_count": subject.memories.count(),
        **_emotions(subject),
        **_personality(subject),
    }
