"""Reuse scoring reads from indexes alone (issue 18.6): the learnings of a key and what it counts
of their injections come from covering indexes, each story's latest gate-8 GO from a small partial
one. The injection table loses its plain learning_id index, which injection_learning_story (it
starts with learning_id) already served. Score rows leave room on their pages, so the upsert of a
scoring run updates them in place (HOT) instead of adding index entries for every key.

Built without locking the tables. A replaced index is dropped first (the new one takes its
name): queries fall back on the other indexes for the seconds the build takes."""

import django.db.models.deletion
from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("memory", "0013_search_calibration")]

    operations = [
        AddIndexConcurrently(
            model_name="gateresult",
            index=models.Index(
                condition=models.Q(("gate", 8), ("verdict", "GO")), fields=["story", "at"], name="gate_go_by_story"
            ),
        ),
        RemoveIndexConcurrently(model_name="learning", name="learning_score_key"),
        AddIndexConcurrently(
            model_name="learning",
            index=models.Index(fields=["story", "gate", "tags_hash"], include=("id",), name="learning_score_key"),
        ),
        RemoveIndexConcurrently(model_name="learninginjection", name="injection_learning_story"),
        AddIndexConcurrently(
            model_name="learninginjection",
            index=models.Index(fields=["learning", "story"], include=("domain", "at"), name="injection_learning_story"),
        ),
        migrations.AlterField(
            model_name="learninginjection",
            name="learning",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="injections",
                to="memory.learning",
            ),
        ),
        migrations.RunSQL(
            "ALTER TABLE memory_reusescore SET (fillfactor = 70)",
            reverse_sql="ALTER TABLE memory_reusescore RESET (fillfactor)",
        ),
    ]
