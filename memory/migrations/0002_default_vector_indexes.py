"""Partial HNSW indexes for the default embedding model (all-MiniLM-L6-v2, 384-d), one per kind."""

from django.db import migrations

from memory.vector_index import DEFAULT_DIMENSION, DEFAULT_MODEL, create_index_sql, drop_index_sql


class Migration(migrations.Migration):
    dependencies = [("memory", "0001_learnings_veille_clarifications_embeddings")]
    operations = [
        migrations.RunSQL(create_index_sql(kind, DEFAULT_MODEL, DEFAULT_DIMENSION), drop_index_sql(kind, DEFAULT_MODEL))
        for kind in ("learning", "veille", "clarification")  # the kinds of this migration's time
    ]
