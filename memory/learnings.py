"""Writes of learnings and gate results (each producer goes through compute_tags_hash).

Agents write to the fleet's shared memory within their manifest's write reach; a person needs the
add permission. Each write leaves an audit row naming who wrote it, and the row its author."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, datetime
from typing import NamedTuple
from uuid import UUID

from django.db import connection, transaction
from django.utils import timezone

from agents import registries
from agents.vocabulary import Registry
from governance.kernel.access import agent_or_perm
from governance.kernel.audit import AuditAction
from governance.kernel.principals import Principal
from governance.kernel.services import record
from memory import holds, provenance, scoring
from memory.indexing import schedule_embedding
from memory.models import GateResult, Learning
from memory.tags import canonical_tags, compute_tags_hash


# Not durable: load_demo runs each app's demo, which calls this, in one transaction.
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
    job: UUID | None = None,
    session: UUID | None = None,
) -> Learning:
    """A new learning starts at scope `story`; its vector is computed after commit, by a worker.
    Its domain is an active value of the domains registry (agents/registries.py) that the agent's
    manifest lets it write into (memory/provenance.py); it keeps its author and the job or session
    it names. An agent's text that addresses the model is held for a reviewer (memory/holds.py)."""
    agent_or_perm(actor, "memory.add_learning")
    provenance.check_domain_write(actor, domain, what="a learning")
    origin = provenance.origin(actor, job=job, session=session)
    registries.check([registries.Use(Registry.DOMAINS, domain, ("body", "domain"))])
    reasons = holds.screen_learning(actor, text, domain)
    learning = Learning.objects.create(
        **origin,
        **holds.held(reasons),
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
    record(actor=actor, action=AuditAction.LEARNING_CREATED, target=learning, story=story, gate=gate)
    if reasons:
        holds.ask_reviewer(learning, reasons, actor=actor)
    schedule_embedding("learning", [learning.pk])
    return learning


# Not durable: a job's result records its gate verdict inside the result's transaction.
@transaction.atomic
def record_gate_result(
    *,
    actor: Principal,
    story: str,
    gate: int,
    verdict: str,
    job: UUID | None = None,
    session: UUID | None = None,
) -> GateResult:
    """A gate's verdict; a gate-8 GO is what makes a story count in the reuse score, so an agent
    records one only for a story it holds work on (memory/provenance.py)."""
    agent_or_perm(actor, "memory.add_gateresult")
    provenance.check_gate_result(actor, story)
    origin = provenance.origin(actor, job=job, session=session)
    scoring.hold_inputs()
    result = GateResult.objects.create(story=story, gate=gate, verdict=verdict, at=timezone.now(), **origin)
    record(actor=actor, action=AuditAction.GATE_RESULT_RECORDED, target=result, story=story, gate=gate, verdict=verdict)
    return result


class GateVerdict(NamedTuple):
    """One gate result of the past, with its own time (an import keeps it: "a gate-8 GO after the
    injection" compares these times)."""

    story: str
    gate: int
    verdict: str
    at: datetime


@transaction.atomic(durable=True)
def record_gate_results(*, actor: Principal, results: Iterable[GateVerdict]) -> tuple[int, int]:
    """Store a batch of past gate results, as ``record_gate_result`` stores one, at their own times.

    Idempotent: a result already stored (same story, gate, verdict and time), or given twice, is
    skipped, so importing the same history again adds nothing. Returns (created, skipped); one
    audit row names the batch's size. New rows get ids above every scoring watermark, so the next
    incremental run rescores the stories they concern."""
    agent_or_perm(actor, "memory.add_gateresult")
    wanted = list(results)
    given = list(dict.fromkeys(wanted))
    scoring.hold_inputs()
    with connection.cursor() as cursor:  # two imports of the same file at once would both see a row as new
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext('memory.gate_results'))")
    stored = GateResult.objects.filter(story__in={result.story for result in given})
    existing = {GateVerdict(*row) for row in stored.values_list("story", "gate", "verdict", "at")}
    new = [GateResult(**result._asdict()) for result in given if result not in existing]
    created = GateResult.objects.bulk_create(new, batch_size=1000)
    if created:
        record(actor=actor, action=AuditAction.GATE_RESULTS_IMPORTED, target=created[0], created=len(created))
    return len(created), len(wanted) - len(created)
