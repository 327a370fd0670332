"""Cron job triggers are fired by one beat entry, every minute (agents.triggers.fire_due)."""

from django.db import migrations
from django.utils import timezone

# Frozen here (governance.kernel.schedules as of issue 35): a migration does the same whatever the code becomes.
SCHEDULES = [
    (
        "job triggers",
        "agents.fire_due_triggers",
        60,
        "Creates the jobs of cron job triggers whose slot has come (each slot once).",
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
    dependencies = [("agents", "0009_job_triggers_and_queue")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
