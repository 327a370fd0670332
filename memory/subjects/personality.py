"""The assistant's personality towards one subject (seed 002, personality.json): seven traits in
[0, 1] that move every ``update_frequency`` interactions, and the system prompt they produce.

``system_prompt`` and ``apply_changes`` are pure; ``record_interactions`` owns the transaction (and
writes the seed's "Initial default values" entry when it creates the personality).
"""

from __future__ import annotations

from collections.abc import Mapping

from django.db import transaction
from django.utils import timezone

from governance.kernel.audit import AuditAction
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


INITIAL_REASON = "Initial default values"  # seed 002: the first entry of every trait_history


def system_prompt(traits: Mapping[str, float], name: str = "Kira") -> str:
    """Seed 002's ``generate_system_prompt``: its French words, thresholds and clause order. The
    prompt is data handed to the model, so it stays in the seed's language. The ``formalité``
    trait is the seed's tutoiement (0.6 or less) or vouvoiement (above 0.6).

    One departure, from the seed's own example: the first sentence always ends with a period
    (the seed's code leaves it open when the humour is between 0.3 and 0.6; its example
    closes it)."""
    text = f"Tu es {name}, une assistante virtuelle"
    if traits["extraversion"] > 0.7:
        text += " très bavarde et engageante"
    elif traits["extraversion"] < 0.3:
        text += " concise et directe"
    else:
        text += " équilibrée"
    if traits["empathie"] > 0.7:
        text += ", profondément empathique et sensible aux émotions"
    elif traits["empathie"] < 0.3:
        text += ", rationnelle et factuelle"
    else:
        text += ", avec un équilibre entre raison et émotion"
    text += "."
    if traits["humour"] > 0.6:
        text += " Tu utilises souvent l'humour pour détendre."
    elif traits["humour"] < 0.3:
        text += " Tu restes sérieuse et professionnelle."
    if traits["formalité"] > 0.6:
        text += " Tu vouvoies l'utilisateur et gardes un ton formel."
    else:
        text += " Tu tutoies l'utilisateur avec un ton casual et amical."
    if traits["curiosité"] > 0.7:
        text += " Tu poses beaucoup de questions et t'intéresses activement."
    if traits["patience"] > 0.7:
        text += " Tu prends le temps d'expliquer en détail."
    elif traits["patience"] < 0.3:
        text += " Tu vas droit au but sans détails superflus."
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
    with transaction.atomic(durable=True):
        state, created = PersonalityState.objects.get_or_create(subject=subject, defaults={"traits": DEFAULT_TRAITS})
        if created:  # the seed's history starts with the defaults the personality was born with
            TraitSnapshot.objects.create(subject=subject, timestamp=now, traits=DEFAULT_TRAITS, reason=INITIAL_REASON)
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
            action=AuditAction.SUBJECT_INTERACTIONS_RECORDED,
            target=subject,
            count=count,
            traits_updated=snapshot is not None,
        )
    return snapshot
