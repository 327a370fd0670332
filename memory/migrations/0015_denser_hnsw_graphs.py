"""The HNSW indexes get a denser graph (m 24, ef_construction 128; memory/vector_index.py says
why). Each index built with other options is rebuilt CONCURRENTLY beside the old one, which
serves searches until the new one takes its name: writes and searches go on. At a million
learnings the build takes about 8 minutes on 2 cores with MEMORY_INDEX_BUILD_MEMORY at 4GB
(docs/upgrade.md). A database migrated from scratch already has the new options: nothing to do."""

import logging
import re

from django.conf import settings
from django.db import migrations

logger = logging.getLogger(__name__)

# Frozen here (memory.indexing.rebuild_outdated as of issue 35): a migration does the same whatever the code becomes.
HNSW_OPTIONS = "WITH (m = 24, ef_construction = 128)"
WANTED_OPTIONS = {"m=24", "ef_construction=128"}
HNSW_INDEXES = """
    SELECT c.relname, pg_get_indexdef(c.oid), c.reloptions, i.indisvalid
      FROM pg_index i
      JOIN pg_class c ON c.oid = i.indexrelid
      JOIN pg_am am ON am.oid = c.relam
     WHERE i.indrelid = %s::regclass AND am.amname = 'hnsw'
"""
REBUILD_SUFFIX = "_rebuild"


def rebuild(apps, schema_editor) -> None:
    """Rebuild each HNSW index of the embedding table built with other options, under a temporary
    name then renamed; an invalid temporary index left by an interrupted run is dropped first."""
    table = apps.get_model("memory", "Embedding")._meta.db_table
    # The operator's knob for these builds (docs/upgrade.md); its default as of this migration.
    build_memory = str(getattr(settings, "MEMORY_INDEX_BUILD_MEMORY", "1GB"))
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(HNSW_INDEXES, [table])
        indexes = cursor.fetchall()
        for name, _, _, valid in indexes:
            if name.endswith(REBUILD_SUFFIX) and not valid:
                cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
        for name, definition, options, valid in indexes:
            if name.endswith(REBUILD_SUFFIX) or (valid and set(options or []) == WANTED_OPTIONS):
                continue
            temporary = f"{name[: 63 - len(REBUILD_SUFFIX)]}{REBUILD_SUFFIX}"
            statement = definition.replace(f"CREATE INDEX {name} ON", f"CREATE INDEX CONCURRENTLY {temporary} ON", 1)
            if statement == definition:  # only our own index names, which never need quoting
                raise ValueError(f"unexpected definition of {name}: {definition}")
            logger.info("[index] rebuilding %s with %s", name, HNSW_OPTIONS)
            cursor.execute("SELECT set_config('maintenance_work_mem', %s, false)", [build_memory])
            try:
                cursor.execute(re.sub(r"WITH \([^)]*\)", HNSW_OPTIONS, statement, count=1))
            finally:
                cursor.execute("RESET maintenance_work_mem")
            cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
            cursor.execute(f"ALTER INDEX {temporary} RENAME TO {name}")


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("memory", "0014_covering_scoring_indexes")]

    operations = [migrations.RunPython(rebuild, migrations.RunPython.noop, elidable=True)]
