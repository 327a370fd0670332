"""Retention policies: how one growing table is archived or pruned, in bounded batches.

Each app declares the policy of the table it owns (it alone knows which rows are old enough and
which are still needed); the project's ``controlplane/retention.py`` runs them in order with their
settings and records the run. This module knows no app's models.

A batch is one short transaction: it locks up to ``batch_size`` candidate rows with ``FOR UPDATE
SKIP LOCKED`` and archives or deletes exactly those. So a run never holds locks on a live table
for long, a run cut short resumes where it stopped (the rows done are no longer candidates), and
two runs at once share the rows instead of waiting for each other or counting a row twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal

from django.db import transaction
from django.db.models import QuerySet

ARCHIVE: Final = "archive"
PRUNE: Final = "prune"


@dataclass(frozen=True)
class Policy:
    """``candidates(cutoff)`` selects the rows past retention that are still to do. An archive
    writes ``archived`` into them (which must take them out of ``candidates``, or a run would
    never end); a prune deletes them."""

    name: str
    action: Literal["archive", "prune"]
    candidates: Callable[[datetime], QuerySet[Any]]
    archived: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if (self.action == ARCHIVE) != (self.archived is not None):
            raise ValueError(f"{self.name}: an archive says what it writes, a prune writes nothing")


def count(policy: Policy, cutoff: datetime) -> int:
    """What a run would do now (a dry run)."""
    return policy.candidates(cutoff).order_by().count()


def apply(policy: Policy, cutoff: datetime, *, batch_size: int) -> int:
    """Archive or prune every candidate, ``batch_size`` rows per transaction; the rows done."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    done = 0
    while True:
        # Not durable: periodic's guard holds each step in a savepoint when the run is inside a transaction.
        with transaction.atomic():
            candidates = policy.candidates(cutoff).order_by().select_for_update(skip_locked=True, of=("self",))
            ids = list(candidates.values_list("pk", flat=True)[:batch_size])
            if not ids:
                return done
            batch = candidates.model.objects.filter(pk__in=ids)
            if policy.archived is not None:
                done += batch.update(**policy.archived)
            else:
                done += batch.delete()[1].get(candidates.model._meta.label, 0)
        if len(ids) < batch_size:
            return done
