"""Migration tests: take the schema back to a migration, write rows the way that release did,
migrate forward, and always end on the latest schema again for the tests that follow."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.apps.registry import Apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

Targets = list[tuple[str, str]]


def migrate(targets: Targets) -> Apps:
    """Migrate to ``targets``; the historical models as of there."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@contextmanager
def back_at(targets: Targets) -> Iterator[Apps]:
    """The schema as of ``targets`` inside the block (the historical models yielded), the latest one,
    later migrations included, after it whatever happened."""
    try:
        yield migrate(targets)
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
