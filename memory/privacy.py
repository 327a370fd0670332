"""Operators correct what memory holds about people: erase a learning, a watch note or a
clarification, or redact one (its text replaced by ``[redacted]``).

Only a person with the model's delete (erase) or change (redact) permission may: the Admin role.
Agents, reviewers and the system are refused before anything is read.

Erasing is a hard delete, since the point of the request is that the content is gone, from the
database and from every search: the row, its vectors of every model, and for a learning its
injections and promotion proposals (rows that only exist for it, and that reference it); the
reuse score of its key is recomputed at once from what remains (``scoring.rescore``), so scores,
promotions and the next full run agree. Redacting keeps the row, its tags and its score key, so
counts and scores stay as they were, but removes its vectors and marks it (``redacted_at``) so
that no embedding run ever computes one again: a redacted row never surfaces in a search nor in
an injection block's similarity sections.

An erased or redacted learning leaves a one-way hash of its key and text (ErasedLearning), so
that importing the seed's learnings files again, as the migration period does, skips it instead of
bringing its content back. The audit row says who, when, which object and what was done; never
the content. Copies of the
content elsewhere are replaced too: a promotion proposal's review item quotes the learning's text
for the reviewer, and a watch note's path (often a slug of its title) is in its audit rows and,
for a redacted note, replaced on the row itself; and a job's ragContext keeps the block it was
served, whose copy of the words is replaced too (``rag.scrub_jobs``). A watch note mirrored from a file comes back at
the next indexing of its directory unless the file goes as well: the file is the source of truth
(memory/watch_notes.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Forbidden, NotFound
from governance.kernel.models import AuditEvent
from governance.kernel.principals import Principal
from governance.kernel.services import record
from governance.reviews.models import ReviewItem
from memory import rag, scoring
from memory.models import (
    Clarification,
    Embedding,
    ErasedLearning,
    Learning,
    LearningInjection,
    PromotionProposal,
    VeilleNote,
)

REDACTED = "[redacted]"

Correctable = Learning | VeilleNote | Clarification


@dataclass(frozen=True)
class Kind:
    """What a correctable kind of memory is made of: its model, its fields holding content, and
    the audit actions of erasing and redacting one."""

    name: str
    model: type[Learning] | type[VeilleNote] | type[Clarification]
    content: tuple[str, ...]
    erased: AuditAction
    redacted: AuditAction


KINDS = {
    "learning": Kind("learning", Learning, ("text",), AuditAction.LEARNING_ERASED, AuditAction.LEARNING_REDACTED),
    "veille": Kind("veille", VeilleNote, ("title", "summary"), AuditAction.VEILLE_ERASED, AuditAction.VEILLE_REDACTED),
    "clarification": Kind(
        "clarification",
        Clarification,
        ("verbatim",),
        AuditAction.CLARIFICATION_ERASED,
        AuditAction.CLARIFICATION_REDACTED,
    ),
}


def require_operator(actor: Principal, perm: str) -> None:
    """A person holding ``perm``; never an agent, and never the system acting for nobody."""
    if not actor.is_operator or not actor.has_perm(perm):
        raise Forbidden(f"Correcting memory needs an operator with the {perm} permission.")


def _perm(kind: Kind, action: str) -> str:
    return f"memory.{action}_{kind.model._meta.model_name}"


def _locked(kind: Kind, object_id: int) -> Correctable:
    found = kind.model.objects.select_for_update().filter(pk=object_id).first()
    if found is None:
        raise NotFound(f"No {kind.name} {object_id}.")
    return found


def _scrub_review_copies(learning: Learning) -> None:
    """Promotion review items quote the learning's text for the reviewer: replace that copy."""
    items = ReviewItem.objects.filter(pk__in=PromotionProposal.objects.filter(learning=learning).values("review_item"))
    for item in items.select_for_update():
        item.payload = {**item.payload, "text": REDACTED}
        item.save(update_fields=["payload"])


def _scrub_audit_paths(note: VeilleNote) -> None:
    """A watch note's audit rows name its path, which for a posted note is a slug of its title."""
    rows = AuditEvent.objects.filter(target_type=VeilleNote._meta.label_lower, target_id=str(note.pk))
    for event in rows.filter(data__has_key="path"):
        event.data = {**event.data, "path": REDACTED}
        event.save(update_fields=["data"])


LearningKey = tuple[str, int, str, str]
"""What makes an imported learning line the same learning: story, gate, tags_hash and text."""


def learning_digest(key: LearningKey) -> str:
    return hashlib.sha256("\x00".join(map(str, key)).encode("utf-8", "surrogatepass")).hexdigest()


def erased_learnings(keys: Iterable[LearningKey]) -> set[LearningKey]:
    """Those of ``keys`` an operator erased or redacted (one query for a batch of import lines)."""
    digests = {learning_digest(key): key for key in keys}
    found = ErasedLearning.objects.filter(digest__in=digests).values_list("digest", flat=True)
    return {digests[digest] for digest in found}


def _document_id(row: Correctable) -> str:
    """The row's id among a job's ragContext documents (memory/rag.py)."""
    if isinstance(row, Learning):
        return f"learning:{row.pk}"
    if isinstance(row, VeilleNote):
        return f"veille:{row.pk}"
    return f"clarification:{row.story}:v{row.version}"


def _scrub_copies(row: Correctable, kind: Kind) -> None:
    if isinstance(row, Learning):
        ErasedLearning.objects.get_or_create(digest=learning_digest((row.story, row.gate, row.tags_hash, row.text)))
        _scrub_review_copies(row)
    if isinstance(row, VeilleNote):
        _scrub_audit_paths(row)
    # Jobs keep the block they were served (their ragContext): the words go from there too.
    rag.scrub_jobs(_document_id(row), [getattr(row, name) for name in kind.content], REDACTED)


def erase(kind_name: str, object_id: int, *, actor: Principal) -> None:
    """Delete the row, its vectors and (learnings) its injections and proposals; rescore its key."""
    kind = KINDS[kind_name]
    require_operator(actor, _perm(kind, "delete"))
    with transaction.atomic(durable=True):
        row = _locked(kind, object_id)
        record(actor=actor, action=kind.erased, target=row)
        _scrub_copies(row, kind)
        if isinstance(row, Learning):
            PromotionProposal.objects.filter(learning=row).delete()
            LearningInjection.objects.filter(learning=row).delete()
        Embedding.objects.filter(kind=kind.name, object_id=row.pk).delete()
        row.delete()
        if isinstance(row, Learning):
            scoring.rescore([(row.story, row.gate, row.tags_hash)])


def redact(kind_name: str, object_id: int, *, actor: Principal) -> None:
    """Replace the row's content with ``[redacted]`` and drop its vectors for good."""
    kind = KINDS[kind_name]
    require_operator(actor, _perm(kind, "change"))
    with transaction.atomic(durable=True):
        row = _locked(kind, object_id)
        _scrub_copies(row, kind)  # first: a learning's tombstone hashes the text it had
        fields = [*kind.content, "redacted_at"]
        for name in kind.content:
            setattr(row, name, REDACTED)
        row.redacted_at = timezone.now()
        if isinstance(row, VeilleNote):
            row.path = f"{REDACTED} {row.pk}"  # unique, and under no indexed directory
            fields.append("path")
        row.save(update_fields=fields)
        Embedding.objects.filter(kind=kind.name, object_id=row.pk).delete()
        record(actor=actor, action=kind.redacted, target=row)
