"""The Viewer / Reviewer / Admin groups and the heartbeat schedule."""

from django.db import migrations

from governance.kernel import roles, schedules


def forwards(apps, schema_editor):
    roles.sync(apps)
    schedules.seed(apps, [schedules.HEARTBEAT])


class Migration(migrations.Migration):
    dependencies = [
        ("governance", "0002_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
