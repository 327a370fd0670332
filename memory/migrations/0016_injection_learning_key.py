"""Each injection carries its learning's key (story, gate, tags_hash), so reuse scoring counts the
injections of a key from one covering index instead of finding the key's learnings first
(issue 18.6; memory/scoring.py).

The database writes the copy: a trigger sets it from the learning on every insert and update, so
the previous release, still serving during `migrate` (docs/upgrade.md), records the key without
knowing the columns, and no writer can record a wrong one. In order, none of it blocking writes
for longer than a catalog change:

1. the columns, nullable (no table rewrite), and the trigger;
2. the rows written before the trigger get their key, in batches of ids, each its own transaction:
   a row written meanwhile already has its key, from the trigger;
3. NOT NULL, proved by a CHECK validated without blocking writes, so SET NOT NULL need not scan;
4. the covering index on the key, built CONCURRENTLY; the plain learning_id index (for the
   learning's foreign key) replaces the covering one that scoring no longer reads.

At a million injections the backfill takes about a minute on 2 cores and leaves the table's
earlier row versions to autovacuum."""

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models

COLUMNS = """
    ALTER TABLE memory_learninginjection
        ADD COLUMN learning_story varchar(100) NULL,
        ADD COLUMN learning_gate smallint NULL CHECK (learning_gate >= 0),
        ADD COLUMN learning_tags_hash varchar(64) NULL;

    CREATE FUNCTION memory_injection_learning_key() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        SELECT l.story, l.gate, l.tags_hash INTO NEW.learning_story, NEW.learning_gate, NEW.learning_tags_hash
          FROM memory_learning l WHERE l.id = NEW.learning_id;
        IF NOT FOUND THEN
            RAISE foreign_key_violation USING MESSAGE = format('learning %s does not exist', NEW.learning_id);
        END IF;
        RETURN NEW;
    END
    $$;

    CREATE TRIGGER injection_learning_key BEFORE INSERT OR UPDATE ON memory_learninginjection
        FOR EACH ROW EXECUTE FUNCTION memory_injection_learning_key();
"""
DROP_COLUMNS = """
    DROP TRIGGER injection_learning_key ON memory_learninginjection;
    DROP FUNCTION memory_injection_learning_key();
    ALTER TABLE memory_learninginjection
        DROP COLUMN learning_story, DROP COLUMN learning_gate, DROP COLUMN learning_tags_hash;
"""

BATCH = 50_000


def backfill(apps, schema_editor) -> None:
    """Give every earlier row its key: updating a row fires the trigger, which sets it."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT min(id), max(id) FROM memory_learninginjection WHERE learning_story IS NULL")
        low, high = cursor.fetchone()
        if low is None:
            return
        for start in range(low, high + 1, BATCH):
            cursor.execute(
                "UPDATE memory_learninginjection SET learning_id = learning_id"
                " WHERE id >= %s AND id < %s AND learning_story IS NULL",
                [start, start + BATCH],
            )


NOT_NULL = """
    ALTER TABLE memory_learninginjection ADD CONSTRAINT injection_learning_key_set
        CHECK (learning_story IS NOT NULL AND learning_gate IS NOT NULL AND learning_tags_hash IS NOT NULL) NOT VALID;
    ALTER TABLE memory_learninginjection VALIDATE CONSTRAINT injection_learning_key_set;
    ALTER TABLE memory_learninginjection
        ALTER COLUMN learning_story SET NOT NULL,
        ALTER COLUMN learning_gate SET NOT NULL,
        ALTER COLUMN learning_tags_hash SET NOT NULL;
    ALTER TABLE memory_learninginjection DROP CONSTRAINT injection_learning_key_set;
"""


class Migration(migrations.Migration):
    atomic = False  # each backfill batch commits; CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("memory", "0015_denser_hnsw_graphs")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(COLUMNS, DROP_COLUMNS),
                migrations.RunPython(backfill, migrations.RunPython.noop),
                migrations.RunSQL(NOT_NULL, migrations.RunSQL.noop),
            ],
            state_operations=[
                migrations.AddField(
                    model_name="learninginjection",
                    name="learning_story",
                    field=models.CharField(editable=False, help_text="The learning's story", max_length=100),
                ),
                migrations.AddField(
                    model_name="learninginjection",
                    name="learning_gate",
                    field=models.PositiveSmallIntegerField(editable=False, help_text="The learning's gate"),
                ),
                migrations.AddField(
                    model_name="learninginjection",
                    name="learning_tags_hash",
                    field=models.CharField(editable=False, help_text="The learning's tags_hash", max_length=64),
                ),
            ],
        ),
        AddIndexConcurrently(
            model_name="learninginjection",
            index=models.Index(
                fields=["learning_story", "learning_gate", "learning_tags_hash", "story"],
                include=("domain", "at"),
                name="injection_score_key",
            ),
        ),
        AddIndexConcurrently(
            model_name="learninginjection", index=models.Index(fields=["learning"], name="injection_learning")
        ),
        RemoveIndexConcurrently(model_name="learninginjection", name="injection_learning_story"),
    ]
