"""SQL of the partial HNSW indexes: one per (kind, embedding model), on a cast of the untyped
vector column to that model's dimension (DESIGN section 3). Pure: no Django.

Queries must use the same cast and the same WHERE for PostgreSQL to pick the index.
"""

from __future__ import annotations

import re

DEFAULT_MODEL = "all-MiniLM-L6-v2"
DEFAULT_DIMENSION = 384
KINDS = ("learning", "veille", "clarification", "subject")
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64


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
        f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) "
        f"WHERE kind = {_literal(kind)} AND model = {_literal(model)} AND active"
    )


def drop_index_sql(kind: str, model: str) -> str:
    return f"DROP INDEX IF EXISTS {index_name(kind, model)}"
