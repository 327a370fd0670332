"""Partial HNSW indexes for the default embedding model (all-MiniLM-L6-v2, 384-d), one per kind."""

from django.db import migrations

# Frozen here (memory.vector_index's SQL as of issue 35): a migration does the same whatever the code becomes.
CREATE_INDEX = (
    "CREATE INDEX IF NOT EXISTS embedding_{kind}_all_minilm_l6_v2_hnsw ON memory_embedding "
    "USING hnsw ((embedding::vector(384)) vector_cosine_ops) WITH (m = 24, ef_construction = 128) "
    "WHERE kind = '{kind}' AND model = 'all-MiniLM-L6-v2' AND active"
)
DROP_INDEX = "DROP INDEX IF EXISTS embedding_{kind}_all_minilm_l6_v2_hnsw"


class Migration(migrations.Migration):
    dependencies = [("memory", "0001_learnings_veille_clarifications_embeddings")]
    operations = [
        migrations.RunSQL(CREATE_INDEX.format(kind=kind), DROP_INDEX.format(kind=kind))
        for kind in ("learning", "veille", "clarification")  # the kinds of this migration's time
    ]
