"""Jobs always end: tool calls of dryRun jobs are marked dry, and the job sweeper is scheduled."""

from django.db import migrations, models
from django.utils import timezone

# Frozen here (governance.kernel.schedules as of issue 35): a migration does the same whatever the code becomes.
SCHEDULES = [
    (
        "job sweeper",
        "agents.sweep_jobs",
        60,
        "Re-queues jobs whose lease expired (with backoff, within JOB_LOCK_RETRY attempts), then fails "
        "them; expires jobs past expiresAt; fails jobs past constraints.timeout.",
    ),
]


def forwards(apps, schema_editor):
    interval_model = apps.get_model("django_celery_beat", "IntervalSchedule")
    periodic_model = apps.get_model("django_celery_beat", "PeriodicTask")
    for name, task, every_seconds, description in SCHEDULES:
        interval, _ = interval_model.objects.get_or_create(every=every_seconds, period="seconds")
        periodic_model.objects.get_or_create(
            name=name, defaults={"task": task, "interval": interval, "enabled": True, "description": description}
        )
    # Tell a running beat to reload its schedule.
    changed_model = apps.get_model("django_celery_beat", "PeriodicTasks")
    changed_model.objects.update_or_create(ident=1, defaults={"last_update": timezone.now()})


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
