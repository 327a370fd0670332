"""The weekly full scoring run: it recomputes every reuse score and reports what the daily
incremental runs had wrong (memory.tasks.full_scoring)."""

from django.db import migrations
from django.utils import timezone

# Frozen here (governance.kernel.schedules as of issue 35): a migration does the same whatever the code becomes.
SCHEDULES = [
    (
        "memory weekly full scoring",
        "memory.full_scoring",
        7 * 24 * 3600,
        "Recomputes every reuse score and reports the keys it corrected (ScoringRun, a warning in the log).",
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
        ("memory", "0009_corrections"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
