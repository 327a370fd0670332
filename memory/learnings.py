"""Writes of learnings and gate results (each producer goes through compute_tags_hash).

Agents write to the fleet's shared memory; a person needs the add permission. Each write leaves
an audit row naming who wrote it."""

from __future__ import annotations

from datetime import date

from django.db import transaction
from django.utils import timezone

from governance.kernel.access import agent_or_perm
from governance.kernel.principals import Principal
from governance.kernel.services import record
from memory import scoring
from memory.indexing import schedule_embedding
from memory.models import GateResult, Learning
from memory.tags import canonical_tags, compute_tags_hash


@transaction.atomic
def create_learning(
    *,
    actor: Principal,
    story: str,
    gate: int,
    domain: str,
    project: str,
    tags: list[str],
    text: str,
    date_created: date | None = None,
) -> Learning:
    """A new learning starts at scope `story`; its vector is computed after commit, by a worker."""
    agent_or_perm(actor, "memory.add_learning")
    learning = Learning.objects.create(
        story=story,
        gate=gate,
        domain=domain,
        project=project,
        tags=canonical_tags(tags),
        tags_hash=compute_tags_hash(tags),
        text=text,
        date_created=date_created or timezone.localdate(),
        scope=Learning.Scope.STORY,
        scope_migrated_at=timezone.now(),
        created_by=actor.label,
    )
    record(actor=actor, action="learning.created", target=learning, story=story, gate=gate)
    schedule_embedding("learning", [learning.pk])
    return learning


@transaction.atomic
def record_gate_result(*, actor: Principal, story: str, gate: int, verdict: str) -> GateResult:
    """A gate's verdict; a gate-8 GO is what makes a story count in the reuse score."""
    agent_or_perm(actor, "memory.add_gateresult")
    scoring.hold_inputs()
    result = GateResult.objects.create(story=story, gate=gate, verdict=verdict, at=timezone.now())
    record(actor=actor, action="gate_result.recorded", target=result, story=story, gate=gate, verdict=verdict)
    return result
