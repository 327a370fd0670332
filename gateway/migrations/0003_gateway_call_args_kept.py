"""Retention archives the arguments of old gateway calls: a partial index on called_at over the
calls that still hold them, built without locking the table."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("gateway", "0002_stdio_and_call_log")]

    operations = [
        AddIndexConcurrently(
            model_name="gatewaycall",
            index=models.Index(
                condition=models.Q(("arguments__isnull", False)), fields=["called_at"], name="gateway_call_args_kept"
            ),
        ),
    ]
