"""Writes of learnings and gate results (each producer goes through compute_tags_hash)."""

from __future__ import annotations

from datetime import date

from django.db import transaction
from django.utils import timezone

from governance.principals import Principal
from memory.indexing import schedule_embedding
from memory.models import GateResult, Learning
from memory.tags import canonical_tags, compute_tags_hash


@transaction.atomic
def create_learning(
    *, actor: Principal, story: str, gate: int, domain: str, project: str, tags: list[str], text: str,
    date_created: date | None = None,
) -> Learning:  # fmt: skip
    """A new learning starts at scope `story`; its vector is computed after commit, by a worker."""
    learning = Learning.objects.create(
        story=story, gate=gate, domain=domain, project=project, tags=canonical_tags(tags),
        tags_hash=compute_tags_hash(tags), text=text, date_created=date_created or timezone.localdate(),
        scope=Learning.Scope.STORY, scope_migrated_at=timezone.now(), created_by=actor.label,
    )  # fmt: skip
    schedule_embedding("learning", [learning.pk])
    return learning


def record_gate_result(*, story: str, gate: int, verdict: str) -> GateResult:
    return GateResult.objects.create(story=story, gate=gate, verdict=verdict, at=timezone.now())
