"""Retention archives the messages of finished sessions: when it did (a nullable column, added
without rewriting the table), and two partial indexes built without locking the tables."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("ai_sessions", "0010_automation_event")]

    operations = [
        migrations.AddField(
            model_name="sessionmessage",
            name="archived_at",
            field=models.DateTimeField(
                blank=True,
                help_text="When retention cleared its contents (RETENTION_SESSION_MESSAGES_DAYS)",
                null=True,
            ),
        ),
        AddIndexConcurrently(
            model_name="aisession",
            index=models.Index(
                condition=models.Q(("phase", "COMPLETED")), fields=["last_activity"], name="session_finished"
            ),
        ),
        AddIndexConcurrently(
            model_name="sessionmessage",
            index=models.Index(
                condition=models.Q(("archived_at__isnull", True)), fields=["session"], name="message_not_archived"
            ),
        ),
    ]
