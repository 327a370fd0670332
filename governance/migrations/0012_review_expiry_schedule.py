"""The beat entry that expires review items past their deadline, whatever their kind."""

from django.db import migrations

from governance.kernel import schedules


def forwards(apps, schema_editor):
    schedules.seed(apps, [schedules.REVIEW_EXPIRY])


class Migration(migrations.Migration):
    dependencies = [
        ("django_celery_beat", "0019_alter_periodictasks_options"),
        ("governance", "0011_key_minted_by"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
