"""Migrations import no product code, read from their source.

A migration that imports today's code (a schedule list, an index builder) does something else on a
fresh database whenever that code changes, so history rewrites itself. What a migration needs is
copied into it, frozen; this test names the file and the import that breaks the rule. Imports
inside functions count (they run when the migration does), and so do ``import_module("...")``
calls and relative imports (which reach the app itself). The largest frozen copy, memory 0015's
index rebuild, is run once against PostgreSQL: only an upgraded database ever runs it.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.apps import apps as live_apps
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
MIGRATIONS = sorted(path for path in ROOT.glob("*/migrations/*.py") if path.name != "__init__.py")
# Django (the migration framework itself) and pgvector, whose vector field and extension operation
# the schema is written in; everything else a migration needs is the standard library.
ALLOWED = frozenset({"django", "pgvector"}) | frozenset(sys.stdlib_module_names)
DYNAMIC_IMPORTS = ("import_module", "__import__")


def imports(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, module) for every import anywhere in the tree; relative ones as ``.module``."""
    for child in ast.walk(tree):
        if isinstance(child, ast.Import):
            yield from ((child.lineno, alias.name) for alias in child.names)
        elif isinstance(child, ast.ImportFrom):
            yield child.lineno, "." * child.level + (child.module or "")
        elif (
            isinstance(child, ast.Call)
            and (getattr(child.func, "id", None) or getattr(child.func, "attr", None)) in DYNAMIC_IMPORTS
            and child.args
        ):
            first = child.args[0]
            yield (
                child.lineno,
                first.value
                if isinstance(first, ast.Constant) and isinstance(first.value, str)
                else ("<computed name>"),
            )


def unfrozen_imports(source: str) -> list[tuple[int, str]]:
    """The imports of ``source`` that reach outside Django, pgvector and the standard library."""
    return [(line, module) for line, module in imports(ast.parse(source)) if module.split(".")[0] not in ALLOWED]


def test_every_app_has_migrations_to_check() -> None:
    assert {path.parent.parent.name for path in MIGRATIONS} >= {"agents", "gateway", "governance", "memory", "sessions"}


@pytest.mark.parametrize("path", MIGRATIONS, ids=lambda path: str(path.relative_to(ROOT)))
def test_a_migration_imports_no_product_code(path: Path) -> None:
    offending = unfrozen_imports(path.read_text(encoding="utf-8"))
    assert not offending, f"{path.relative_to(ROOT)} imports " + ", ".join(
        f"{module} (line {line})" for line, module in offending
    )


@pytest.mark.parametrize(
    ("source", "module"),
    [
        ("from governance.kernel import schedules", "governance.kernel"),
        ("def rebuild(apps, schema_editor):\n    from memory.indexing import rebuild_outdated", "memory.indexing"),
        ("import importlib\nimportlib.import_module('agents.models')", "agents.models"),
        ("from ..vector_index import create_index_sql", "..vector_index"),
    ],
)
def test_the_check_sees_every_way_of_importing(source: str, module: str) -> None:
    assert [found for _, found in unfrozen_imports(source)] == [module]


def test_django_pgvector_and_the_standard_library_are_allowed() -> None:
    source = "import re\nimport uuid\nfrom django.db import migrations\nfrom pgvector.django import VectorExtension"
    assert unfrozen_imports(source) == []


def _graph(name: str) -> tuple[set[str], str] | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT c.reloptions, pg_get_indexdef(c.oid) FROM pg_class c WHERE c.relname = %s", [name])
        found = cursor.fetchone()
    return None if found is None else (set(found[0] or []), found[1])


@pytest.mark.django_db(transaction=True)
def test_the_frozen_rebuild_of_memory_0015_gives_an_old_graph_index_the_denser_one_under_its_name() -> None:
    """What an upgraded database goes through: an index of the old m 16 / ef_construction 64 is rebuilt
    with m 24 / ef_construction 128, same name, same cast and WHERE; a current index is left alone."""
    name, current = "embedding_learning_old_graph_hnsw", "embedding_learning_all_minilm_l6_v2_hnsw"
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE INDEX {name} ON memory_embedding USING hnsw ((embedding::vector(384)) vector_cosine_ops) "
            "WITH (m = 16, ef_construction = 64) WHERE kind = 'learning' AND model = 'old-graph' AND active"
        )
    old, now = _graph(name), _graph(current)
    assert old is not None
    assert now is not None
    old_options, old_definition = old
    current_definition = now[1]
    migration = importlib.import_module("memory.migrations.0015_denser_hnsw_graphs")
    try:
        with connection.schema_editor(atomic=False) as editor:
            migration.rebuild(live_apps, editor)
        assert old_options == {"m=16", "ef_construction=64"}
        assert _graph(name) == (
            {"m=24", "ef_construction=128"},
            old_definition.replace("m='16', ef_construction='64'", "m='24', ef_construction='128'"),
        )
        assert _graph(f"{name}_rebuild") is None
        assert _graph(current) == ({"m=24", "ef_construction=128"}, current_definition)
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP INDEX IF EXISTS {name}")
