"""The contract checks' admin reads the audit newest first: an index on checked_at, built without
locking the table (bench/scale.py: at 10 000 000 checks each page sorted them all)."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("governance", "0008_notifications")]

    operations = [
        AddIndexConcurrently(
            model_name="contractcheck",
            index=models.Index(fields=["-checked_at"], name="check_recent"),
        ),
    ]
