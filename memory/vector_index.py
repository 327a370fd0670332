"""SQL of the partial HNSW indexes: one per (kind, embedding model), on a cast of the untyped
vector column to that model's dimension (DESIGN section 3). Pure: no Django.

Queries must use the same cast and the same WHERE for PostgreSQL to pick the index.
"""

from __future__ import annotations

import re

DEFAULT_MODEL = "all-MiniLM-L6-v2"
DEFAULT_DIMENSION = 384
KINDS = ("learning", "veille", "clarification", "subject")
# A denser graph than pgvector's defaults (16, 64): at a million clustered learnings, m 16 /
# ef_construction 64 stayed short of recall@5 0.95 even at ef_search 1000 (24 ms per search), while
# m 24 / ef_construction 128 reaches 0.97 at ef_search 160 (7 ms) for a build 1.6 times as long
# (bench/README.md, issue 18). Indexes built with other values are rebuilt by
# `manage.py rebuild_vector_indexes` (memory.indexing.rebuild_outdated; migration memory 0015 ran it once).
HNSW_M = 24
HNSW_EF_CONSTRUCTION = 128


def hnsw_options() -> str:
    """The WITH clause every HNSW index is built with."""
    return f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"


def index_name(kind: str, model: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", model.lower()).strip("_")
    return f"embedding_{kind}_{slug}_hnsw"[:63]


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def create_index_sql(kind: str, model: str, dimension: int, *, concurrently: bool = False) -> str:
    """``concurrently``: writers go on during the build (outside a transaction only); a migration builds
    on tables nobody writes yet, the running plane on live ones (memory/indexing.py)."""
    if kind not in KINDS:
        raise ValueError(f"unknown embedding kind {kind!r}")
    if not 1 <= int(dimension) <= 2000:
        raise ValueError("HNSW indexes take 1 to 2000 dimensions")
    return (
        f"CREATE INDEX {'CONCURRENTLY ' if concurrently else ''}IF NOT EXISTS {index_name(kind, model)} "
        "ON memory_embedding "
        f"USING hnsw ((embedding::vector({int(dimension)})) vector_cosine_ops) "
        f"{hnsw_options()} "
        f"WHERE kind = {_literal(kind)} AND model = {_literal(model)} AND active"
    )


def drop_index_sql(kind: str, model: str) -> str:
    return f"DROP INDEX IF EXISTS {index_name(kind, model)}"
