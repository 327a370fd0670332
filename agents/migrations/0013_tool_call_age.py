"""Retention prunes tool calls by age: an index on called_at, built without locking the table."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("agents", "0012_kpi_alert_schedule")]

    operations = [
        AddIndexConcurrently(
            model_name="toolcall",
            index=models.Index(fields=["called_at"], name="tool_call_age"),
        ),
    ]
