"""The assistant's personality towards one subject (seed 002, personality.json): seven traits in
[0, 1] that move every ``update_frequency`` interactions, and the system prompt they produce.

``system_prompt`` and ``apply_changes`` are pure; ``record_interactions`` owns the transaction.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.db import transaction
from django.utils import timezone

from governance.kernel.principals import Principal
from governance.kernel.services import record as audit
from memory.models import PersonalityState, Subject, TraitSnapshot
from memory.subjects.documents import TRAITS

DEFAULT_TRAITS = {
    "extraversion": 0.6,
    "empathie": 0.8,
    "humour": 0.5,
    "formalité": 0.3,
    "curiosité": 0.7,
    "enthousiasme": 0.6,
    "patience": 0.7,
}  # fmt: skip  (seed 002: "Initial default values")


def system_prompt(traits: Mapping[str, float], name: str = "Kira") -> str:
    """The seed's thresholds and clause order, in our own words."""
    text = f"You are {name}, a virtual assistant"
    if traits["extraversion"] > 0.7:
        text += " who is talkative and engaging"
    elif traits["extraversion"] < 0.3:
        text += " who is concise and direct"
    else:
        text += " with a balanced manner"
    if traits["empathie"] > 0.7:
        text += ", deeply empathetic and attentive to feelings"
    elif traits["empathie"] < 0.3:
        text += ", rational and factual"
    else:
        text += ", balancing reason and emotion"
    text += "."
    if traits["humour"] > 0.6:
        text += " You often use humour to lighten the mood."
    elif traits["humour"] < 0.3:
        text += " You stay serious and professional."
    if traits["formalité"] > 0.6:
        text += " You address the user formally and keep a formal tone."
    else:
        text += " You address the user informally, in a casual and friendly tone."
    if traits["curiosité"] > 0.7:
        text += " You ask many questions and take an active interest."
    if traits["patience"] > 0.7:
        text += " You take the time to explain in detail."
    elif traits["patience"] < 0.3:
        text += " You get straight to the point without unnecessary detail."
    return text


def apply_changes(traits: Mapping[str, float], changes: Mapping[str, float]) -> tuple[dict[str, float], dict[str, str]]:
    """New traits (clamped to [0, 1], two decimals) and the deltas as the seed writes them
    ("+0.08"), for the traits that moved."""
    new = dict(traits)
    written: dict[str, str] = {}
    for trait in TRAITS:
        delta = changes.get(trait, 0.0)
        if not delta:
            continue
        moved = round(min(1.0, max(0.0, traits[trait] + delta)), 2)
        actual = round(moved - traits[trait], 2)
        new[trait] = moved
        if actual:
            written[trait] = f"{actual:+.2f}"
    return new, written


def record_interactions(
    subject: Subject, *, actor: Principal, count: int, feedback: Mapping[str, float], reason: str
) -> TraitSnapshot | None:
    """Count ``count`` interactions and add their feedback to the pending deltas; every
    ``update_frequency`` interactions the pending deltas are applied, and a snapshot says why.
    Returns the snapshot when one was written."""
    now = timezone.now()
    with transaction.atomic():
        state, _ = PersonalityState.objects.get_or_create(subject=subject, defaults={"traits": DEFAULT_TRAITS})
        state = PersonalityState.objects.select_for_update().get(pk=state.pk)
        pending = dict(state.pending_changes)
        for trait, delta in feedback.items():
            pending[trait] = round(pending.get(trait, 0.0) + delta, 6)
        state.total_interactions += count
        state.interactions_since_update += count
        state.last_updated = now
        snapshot = None
        if state.interactions_since_update >= state.update_frequency:
            traits, changes = apply_changes(state.traits, pending)
            snapshot = TraitSnapshot.objects.create(
                subject=subject,
                timestamp=now,
                traits=traits,
                interactions_count=state.interactions_since_update,
                changes=changes,
                reason=f"Updated after {state.interactions_since_update} interactions ({reason})",
            )
            state.traits, state.pending_changes = traits, {}
            state.interactions_since_update, state.last_trait_update = 0, now
        else:
            state.pending_changes = pending
        state.save()
        audit(
            actor=actor,
            action="subject.interactions_recorded",
            target=subject,
            count=count,
            traits_updated=snapshot is not None,
        )
    return snapshot
