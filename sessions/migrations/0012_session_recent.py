"""The session list and its admin read sessions newest first: an index on created_at, built
without locking the table (bench/scale.py: at 1 000 000 sessions each page sorted them all)."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("ai_sessions", "0011_message_retention")]

    operations = [
        AddIndexConcurrently(
            model_name="aisession",
            index=models.Index(fields=["-created_at"], name="session_recent"),
        ),
    ]
