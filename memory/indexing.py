"""Embedding of memory rows: scheduled after commit, computed in batches by a Celery task, so
API calls return at once and search sees a row once it is embedded (issue: memory, point 7).

A row's text is hashed; only new or changed texts are embedded again. A row an operator redacted
(memory/privacy.py) is never embedded again, and a vector computed while its row was being
redacted or erased is not written: the rows are locked and read again before the write.

``reembed`` gives every row of a kind a vector of one model (a model change, or a catch-up after a
long outage), batch after batch, each batch committed: a run stopped halfway is resumed by running
it again, since it only looks for rows still without that model's vector.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper
from django.db.models import QuerySet

from governance.kernel import dispatch
from memory.models import Clarification, Embedding, Learning, SubjectMemory, VeilleNote
from memory.vector_index import HNSW_EF_CONSTRUCTION, HNSW_M, create_index_sql, hnsw_options, index_name

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from memory.embeddings import EmbeddingBackend

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


def embeddable(kind: str) -> QuerySet:
    """The rows of ``kind`` that may have a vector: all but those an operator redacted."""
    rows = MODELS[kind].objects.all()
    return rows if kind == "subject" else rows.filter(redacted_at__isnull=True)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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
    objects = list(embeddable(kind).filter(pk__in=object_ids))
    texts = {obj.pk: text_of(kind, obj) for obj in objects}
    digests = {pk: _digest(text) for pk, text in texts.items()}
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
    with transaction.atomic(durable=True):
        unchanged = {
            obj.pk
            for obj in embeddable(kind).select_for_update().filter(pk__in=todo)
            if _digest(text_of(kind, obj)) == digests[obj.pk]
        }
        for pk, vector in zip(todo, vectors, strict=True):
            if pk not in unchanged:
                continue  # erased, redacted or edited meanwhile: an edit scheduled its own embedding
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
    return len(unchanged)


def _without_vector(kind: str, model: str) -> QuerySet:
    embedded = Embedding.objects.filter(kind=kind, model=model).values("object_id")
    return embeddable(kind).exclude(pk__in=embedded)


def backlog(kind: str, model: str) -> int:
    """How many rows of ``kind`` wait for a vector of ``model`` (the metrics' embedding backlog)."""
    return _without_vector(kind, model).count()


def missing(kind: str, model: str, limit: int = 1000, *, after: int = 0) -> list[int]:
    """Rows of ``kind`` without a vector of ``model`` (after a broker outage, or a model change),
    by id from ``after`` on, so a caller can page through them."""
    rows = _without_vector(kind, model).filter(pk__gt=after).order_by("pk")
    return list(rows.values_list("pk", flat=True)[:limit])


def reembed(
    kind: str,
    *,
    backend: EmbeddingBackend,
    batch_size: int = BATCH_SIZE,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Give every row of ``kind`` without one a vector of ``backend``'s model, ``batch_size`` rows
    at a time in id order, each batch its own transaction; then make sure the model's partial HNSW
    index exists for the kind. ``progress(done, total)`` follows each batch. Returns the rows done.

    Paging by id, not by "the first rows still missing", means a row that cannot get a vector
    (redacted or edited meanwhile) is passed over instead of being asked for again forever."""
    total = backlog(kind, backend.model)
    done, after = 0, 0
    while ids := missing(kind, backend.model, batch_size, after=after):
        embed(kind, ids, backend=backend)
        done, after = done + len(ids), ids[-1]
        if progress is not None:
            progress(done, total)
    build_index(kind, backend.model, backend.dimension)  # a new model: searches of its vectors want their own
    return done


def build_index(kind: str, model: str, dimension: int) -> bool:
    """Build the partial HNSW index of (kind, model) unless a valid one exists; True when built.

    On the running plane the table is live: the build is CONCURRENTLY, so embedding writes go on (a
    plain build would hold them for its whole length, minutes at a million rows), and an index a failed
    concurrent build left invalid is dropped and built again. It gets MEMORY_INDEX_BUILD_MEMORY of
    maintenance_work_mem: pgvector builds the graph in memory and slows several times once it spills
    (bench/README.md, memory). Inside a transaction (where CONCURRENTLY is refused) it builds plainly.
    """
    name = index_name(kind, model)
    concurrently = not connection.in_atomic_block
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid WHERE c.relname = %s",
            [name],
        )
        found = cursor.fetchone()
        if found is not None and found[0]:
            return False
        if found is not None:
            logger.warning("[index] %s is invalid (an interrupted build): building it again", name)
            cursor.execute(f"DROP INDEX {'CONCURRENTLY ' if concurrently else ''}IF EXISTS {name}")
        _build(cursor, create_index_sql(kind, model, dimension, concurrently=concurrently), concurrently)
    return True


def _build(cursor: CursorWrapper, statement: str, concurrently: bool) -> None:
    """Run a CREATE INDEX with MEMORY_INDEX_BUILD_MEMORY of maintenance_work_mem: for the session
    when each statement is its own transaction (put back after), else for the transaction."""
    cursor.execute(
        "SELECT set_config('maintenance_work_mem', %s, %s)", [str(settings.MEMORY_INDEX_BUILD_MEMORY), not concurrently]
    )
    try:
        cursor.execute(statement)
    finally:
        if concurrently:
            cursor.execute("RESET maintenance_work_mem")


# The HNSW indexes of the embedding table, with the options they were built with.
_HNSW_INDEXES = """
    SELECT c.relname, pg_get_indexdef(c.oid), c.reloptions, i.indisvalid
      FROM pg_index i
      JOIN pg_class c ON c.oid = i.indexrelid
      JOIN pg_am am ON am.oid = c.relam
     WHERE i.indrelid = %s::regclass AND am.amname = 'hnsw'
"""
_REBUILD_SUFFIX = "_rebuild"


def rebuild_outdated() -> list[str]:
    """Rebuild each HNSW index of the embedding table built with other graph options than the
    shipped ones (memory.vector_index.HNSW_M, HNSW_EF_CONSTRUCTION); returns their names.

    Searches keep their index meanwhile: the new one is built CONCURRENTLY under a temporary name
    (writes go on), then it replaces the old one under its name. A run interrupted halfway leaves
    an invalid temporary index, which the next run drops. Outside a transaction only."""
    if connection.in_atomic_block:
        raise RuntimeError("rebuild_outdated builds CONCURRENTLY: call it outside a transaction")
    wanted = {f"m={HNSW_M}", f"ef_construction={HNSW_EF_CONSTRUCTION}"}
    rebuilt = []
    with connection.cursor() as cursor:
        cursor.execute(_HNSW_INDEXES, [Embedding._meta.db_table])
        indexes = cursor.fetchall()
        for name, _, _, valid in indexes:
            if name.endswith(_REBUILD_SUFFIX) and not valid:
                cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
        for name, definition, options, valid in indexes:
            if name.endswith(_REBUILD_SUFFIX) or (valid and set(options or []) == wanted):
                continue
            temporary = f"{name[: 63 - len(_REBUILD_SUFFIX)]}{_REBUILD_SUFFIX}"
            statement = definition.replace(f"CREATE INDEX {name} ON", f"CREATE INDEX CONCURRENTLY {temporary} ON", 1)
            if statement == definition:  # only our own index names, which never need quoting
                raise ValueError(f"unexpected definition of {name}: {definition}")
            logger.info("[index] rebuilding %s with %s", name, hnsw_options())
            _build(cursor, re.sub(r"WITH \([^)]*\)", hnsw_options(), statement, count=1), concurrently=True)
            cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
            cursor.execute(f"ALTER INDEX {temporary} RENAME TO {name}")
            rebuilt.append(name)
    return rebuilt
