"""Cron job triggers are fired by one beat entry, every minute (agents.triggers.fire_due)."""

from django.db import migrations

from governance.kernel import schedules

JOB_TRIGGERS = schedules.Schedule(
    name="job triggers",
    task="agents.fire_due_triggers",
    every_seconds=60,
    description="Creates the jobs of cron job triggers whose slot has come (each slot once).",
)


def forwards(apps, schema_editor):
    schedules.seed(apps, [JOB_TRIGGERS])


class Migration(migrations.Migration):
    dependencies = [("agents", "0009_job_triggers_and_queue")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
