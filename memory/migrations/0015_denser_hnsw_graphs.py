"""The HNSW indexes get a denser graph (m 24, ef_construction 128; memory/vector_index.py says
why). Each index built with other options is rebuilt CONCURRENTLY beside the old one, which
serves searches until the new one takes its name: writes and searches go on. At a million
learnings the build takes about 8 minutes on 2 cores with MEMORY_INDEX_BUILD_MEMORY at 4GB
(docs/upgrade.md). A database migrated from scratch already has the new options: nothing to do."""

from django.db import migrations


def rebuild(apps, schema_editor) -> None:
    from memory.indexing import rebuild_outdated

    rebuild_outdated()


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("memory", "0014_covering_scoring_indexes")]

    operations = [migrations.RunPython(rebuild, migrations.RunPython.noop, elidable=True)]
