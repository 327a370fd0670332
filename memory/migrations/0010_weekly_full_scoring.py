"""The weekly full scoring run: it recomputes every reuse score and reports what the daily
incremental runs had wrong (memory.tasks.full_scoring)."""

from django.db import migrations

from governance.kernel import schedules

WEEKLY_FULL_SCORING = schedules.Schedule(
    "memory weekly full scoring",
    "memory.full_scoring",
    7 * 24 * 3600,
    "Recomputes every reuse score and reports the keys it corrected (ScoringRun, a warning in the log).",
)


def forwards(apps, schema_editor):
    schedules.seed(apps, [WEEKLY_FULL_SCORING])


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0009_corrections"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
