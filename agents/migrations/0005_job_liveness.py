"""Jobs always end: tool calls of dryRun jobs are marked dry, and the job sweeper is scheduled."""

from django.db import migrations, models

from governance.kernel import schedules

JOB_SWEEPER = schedules.Schedule(
    name="job sweeper",
    task="agents.sweep_jobs",
    every_seconds=60,
    description="Re-queues jobs whose lease expired (with backoff, within JOB_LOCK_RETRY attempts), then fails "
    "them; expires jobs past expiresAt; fails jobs past constraints.timeout.",
)


def forwards(apps, schema_editor):
    schedules.seed(apps, [JOB_SWEEPER])


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0004_tool_grants"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [
        migrations.AddField(
            model_name="toolcall",
            name="dry_run",
            field=models.BooleanField(default=False, help_text="Named a dryRun job: recorded, not to be made"),
        ),
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
