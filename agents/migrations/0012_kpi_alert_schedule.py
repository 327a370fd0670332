"""Open KPI alerts are re-judged every hour: a KPI whose window slid out of critical resolves even
when its agent sends no more results."""

from django.db import migrations
from django.utils import timezone

# Frozen here (governance.kernel.schedules as of issue 35): a migration does the same whatever the code becomes.
SCHEDULES = [
    (
        "kpi alerts",
        "agents.recheck_kpi_alerts",
        3600,
        "Re-judges the KPIs with an open critical alert; those back above critical are resolved.",
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
    dependencies = [("agents", "0011_kpi_alerts")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
