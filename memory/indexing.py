"""Embedding of memory rows: scheduled after commit, computed in batches by a Celery task, so
API calls return at once and search sees a row once it is embedded (issue: memory, point 7).

A row's text is hashed; only new or changed texts are embedded again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from django.db import transaction

from governance.kernel import dispatch
from memory.models import Clarification, Embedding, Learning, SubjectMemory, VeilleNote

BATCH_SIZE = 64


def text_of(kind: str, obj: Learning | VeilleNote | Clarification | SubjectMemory) -> str:
    """What is embedded for each kind: the learning's text, a note's title and summary, an answer,
    a subject's memory text."""
    if kind in ("learning", "subject"):
        return obj.text
    if kind == "veille":
        return f"{obj.title}\n{obj.summary}"
    if kind == "clarification":
        return obj.verbatim
    raise ValueError(f"unknown embedding kind {kind!r}")


MODELS = {"learning": Learning, "veille": VeilleNote, "clarification": Clarification, "subject": SubjectMemory}


def schedule_embedding(kind: str, object_ids: Iterable[int]) -> None:
    """Call inside the transaction that created or changed the rows."""
    ids = [int(pk) for pk in object_ids]
    if not ids:
        return
    if kind not in MODELS:
        raise ValueError(f"unknown embedding kind {kind!r}")

    dispatch.after_commit("memory.embed", kind, ids)


def embed(kind: str, object_ids: list[int], *, backend=None) -> int:
    """Embed the given rows whose text is new or changed; returns how many vectors were written."""
    from memory.embeddings import embed_batched, get_backend

    backend = backend or get_backend()
    objects = list(MODELS[kind].objects.filter(pk__in=object_ids))
    texts = {obj.pk: text_of(kind, obj) for obj in objects}
    digests = {pk: hashlib.sha256(text.encode("utf-8")).hexdigest() for pk, text in texts.items()}
    current = dict(
        Embedding.objects.filter(kind=kind, model=backend.model, object_id__in=texts).values_list(
            "object_id", "text_sha256"
        )
    )
    todo = [pk for pk in texts if current.get(pk) != digests[pk]]
    if not todo:
        return 0
    vectors = embed_batched(backend, [texts[pk] for pk in todo], batch_size=BATCH_SIZE)
    archived = set()
    if kind == "learning":
        archived = set(Learning.objects.filter(pk__in=todo, scope=Learning.Scope.ARCHIVED).values_list("pk", flat=True))
    subjects = {obj.pk: obj.subject_id for obj in objects} if kind == "subject" else {}
    with transaction.atomic():
        for pk, vector in zip(todo, vectors, strict=True):
            Embedding.objects.update_or_create(
                kind=kind,
                object_id=pk,
                model=backend.model,
                defaults={
                    "dimension": backend.dimension,
                    "embedding": vector,
                    "text_sha256": digests[pk],
                    "active": pk not in archived,
                    "subject_id": subjects.get(pk),
                },
            )
    return len(todo)


def missing(kind: str, model: str, limit: int = 1000) -> list[int]:
    """Rows of ``kind`` without a vector of ``model`` (after a broker outage, or a model change)."""
    embedded = Embedding.objects.filter(kind=kind, model=model).values("object_id")
    return list(MODELS[kind].objects.exclude(pk__in=embedded).values_list("pk", flat=True)[:limit])
