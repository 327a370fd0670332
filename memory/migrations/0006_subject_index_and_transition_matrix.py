"""The partial HNSW index of per-subject memories, and seed 002's realistic-transition matrix as
default data (editable in the admin afterwards)."""

from django.db import migrations

# Frozen here (memory.vector_index's SQL as of issue 35): a migration does the same whatever the code becomes.
CREATE_INDEX = (
    "CREATE INDEX IF NOT EXISTS embedding_subject_all_minilm_l6_v2_hnsw ON memory_embedding "
    "USING hnsw ((embedding::vector(384)) vector_cosine_ops) WITH (m = 24, ef_construction = 128) "
    "WHERE kind = 'subject' AND model = 'all-MiniLM-L6-v2' AND active"
)
DROP_INDEX = "DROP INDEX IF EXISTS embedding_subject_all_minilm_l6_v2_hnsw"

# Seed 002, "Matrice Transitions Réalistes".
TRANSITION_MATRIX = {
    "neutre": {"neutre": 0.4, "joyeux": 0.25, "pensif": 0.15, "triste": 0.1, "surpris": 0.1},
    "joyeux": {"joyeux": 0.5, "neutre": 0.2, "surpris": 0.15, "excité": 0.1, "triste": 0.05},
    "triste": {"triste": 0.4, "neutre": 0.3, "frustré": 0.15, "joyeux": 0.1, "pensif": 0.05},
    "énervé": {"énervé": 0.35, "frustré": 0.25, "neutre": 0.2, "triste": 0.15, "joyeux": 0.05},
    "surpris": {"surpris": 0.2, "joyeux": 0.3, "neutre": 0.25, "excité": 0.15, "pensif": 0.1},
}


def seed_matrix(apps, schema_editor):
    model = apps.get_model("memory", "TransitionProbability")
    for source, targets in TRANSITION_MATRIX.items():
        for target, probability in targets.items():
            model.objects.get_or_create(from_emotion=source, to_emotion=target, defaults={"probability": probability})


class Migration(migrations.Migration):
    dependencies = [("memory", "0005_subjects")]
    operations = [
        migrations.RunSQL(CREATE_INDEX, DROP_INDEX),
        migrations.RunPython(seed_matrix, migrations.RunPython.noop),
    ]
