"""The periodic task that re-escalates and expires escalations."""

from django.db import migrations

from governance.kernel import schedules


def forwards(apps, schema_editor):
    schedules.seed(apps, [schedules.ESCALATION_TIMEOUTS])


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0002_manifests_jobs_escalations"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
