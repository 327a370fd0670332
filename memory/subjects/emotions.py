"""Emotion history of a subject (seed 002, emotion_history.json): realistic transitions, a
bounded history, and transition and overall statistics that always agree with what was recorded.

The rule is pure (``allowed``); ``record`` owns the transaction: the subject's emotion state row
is locked, so concurrent writers take turns and the history never exceeds ``max_history``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import InvalidInput
from governance.kernel.principals import Principal
from governance.kernel.services import record as audit
from memory.models import EmotionEvent, EmotionState, EmotionTransition, Subject, TransitionProbability

THRESHOLD = 0.05  # seed 002: a transition is realistic when its probability is above 5 %


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    probability: float | None  # None: the matrix says nothing about this move


def allowed(matrix: Mapping[str, Mapping[str, float]], current: str | None, new: str) -> Verdict:
    """``should_allow_transition`` of the seed: an emotion without a row is unconstrained; a move
    absent from its row, or at 5 % or less, is refused."""
    if not current or current not in matrix:
        return Verdict(True, None)
    probability = matrix[current].get(new)
    if probability is None:
        return Verdict(False, 0.0)
    return Verdict(probability > THRESHOLD, probability)


def matrix(source: str | None = None) -> dict[str, dict[str, float]]:
    """The realistic-transition matrix, or only the row of ``source`` (all one move needs)."""
    rows: dict[str, dict[str, float]] = {}
    found = (
        TransitionProbability.objects.all()
        if source is None
        else TransitionProbability.objects.filter(from_emotion=source)
    )
    for source, target, probability in found.values_list("from_emotion", "to_emotion", "probability"):
        rows.setdefault(source, {})[target] = probability
    return rows


def record(
    subject: Subject,
    *,
    actor: Principal,
    emotion: str,
    intensity: float,
    context: str = "",
    triggered_by: str,
    at: datetime | None = None,
) -> EmotionEvent:
    """Append one emotion. Refused (422 naming from, to and probability) when the move from the
    current emotion is not realistic; otherwise the history, the transition counts and averages
    and the statistics change together."""
    at = at or timezone.now()
    with transaction.atomic(durable=True):
        state, _ = EmotionState.objects.get_or_create(subject=subject)
        state = EmotionState.objects.select_for_update().get(pk=state.pk)
        verdict = allowed(matrix(state.current_emotion), state.current_emotion, emotion)
        if not verdict.allowed:
            raise InvalidInput(
                f"The transition {state.current_emotion} -> {emotion} is not realistic "
                f"(probability {verdict.probability}, it must be above {THRESHOLD}).",
                [{"loc": ["body", "emotion"], "msg": "unrealistic transition", "type": "transition"}],
                **{"from": state.current_emotion, "to": emotion, "probability": verdict.probability},
            )
        event = EmotionEvent.objects.create(
            subject=subject,
            timestamp=at,
            emotion=emotion,
            intensity=intensity,
            context=context,
            triggered_by=triggered_by,
        )
        _trim(subject, state.max_history)
        if state.current_emotion and state.current_emotion != emotion:
            _count_transition(subject, state.current_emotion, emotion, state.current_since, at)
            state.total_transitions += 1
        if state.current_emotion != emotion or state.current_since is None:
            state.current_since = at
        state.current_emotion, state.current_intensity = emotion, intensity
        state.total_emotions_recorded += 1
        state.intensity_sum += intensity
        state.counts = {**state.counts, emotion: state.counts.get(emotion, 0) + 1}
        state.last_updated = at
        state.save()
        audit(actor=actor, action=AuditAction.SUBJECT_EMOTION_RECORDED, target=subject, emotion=emotion, event=event.pk)
    return event


def _trim(subject: Subject, bound: int) -> None:
    """Drop the oldest rows beyond the bound (never more rows than ``max_history``)."""
    keep = EmotionEvent.objects.filter(subject=subject).order_by("-timestamp", "-id").values("pk")[:bound]
    EmotionEvent.objects.filter(subject=subject).exclude(pk__in=keep).delete()


def _count_transition(subject: Subject, source: str, target: str, since: datetime | None, at: datetime) -> None:
    row, _ = EmotionTransition.objects.select_for_update().get_or_create(
        subject=subject, from_emotion=source, to_emotion=target
    )
    duration = round(max((at - since).total_seconds(), 0.0)) if since else 0
    # Whole seconds, as the seed's avg_duration_seconds (an int): the mean is rounded each time.
    row.avg_duration_seconds = round((row.avg_duration_seconds * row.count + duration) / (row.count + 1))
    row.count += 1
    row.save(update_fields=["count", "avg_duration_seconds"])
