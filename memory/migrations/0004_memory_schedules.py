"""Daily promotion and eviction runs, and the hourly embeddings catch-up."""

from django.db import migrations

from governance.kernel import schedules


def forwards(apps, schema_editor):
    schedules.seed(apps, schedules.MEMORY_SCHEDULES)


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0003_scoring_runs"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
