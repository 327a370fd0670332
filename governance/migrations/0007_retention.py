"""Retention: the record of each run, its daily schedule, and indexes on the timestamps it
filters (built without locking the tables: contract checks and task runs grow without bound)."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models
from django.utils import timezone

# Frozen here (governance.kernel.schedules as of issue 35): a migration does the same whatever the code becomes.
SCHEDULES = [
    (
        "retention",
        "governance.retention",
        24 * 3600,
        "Archives or prunes what grows without bound, per the RETENTION_* settings; each run is a Retention run row.",
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
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ("governance", "0006_contract_check_tool_source"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [
        migrations.CreateModel(
            name="RetentionRun",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("started_at", models.DateTimeField()),
                ("finished_at", models.DateTimeField()),
                ("actor", models.CharField(max_length=200)),
                ("rows", models.PositiveBigIntegerField(help_text="Rows archived or pruned, all steps together")),
                (
                    "steps",
                    models.JSONField(default=list, help_text="Per step: table, action, days, cutoff, rows, seconds"),
                ),
            ],
            options={"ordering": ["-started_at"]},
        ),
        migrations.RunPython(forwards, migrations.RunPython.noop),
        AddIndexConcurrently(
            model_name="contractcheck",
            index=models.Index(
                condition=models.Q(("output__isnull", False)), fields=["checked_at"], name="check_output_kept"
            ),
        ),
        AddIndexConcurrently(
            model_name="taskrun",
            index=models.Index(fields=["started_at"], name="taskrun_age"),
        ),
    ]
