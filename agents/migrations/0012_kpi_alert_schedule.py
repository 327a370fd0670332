"""Open KPI alerts are re-judged every hour: a KPI whose window slid out of critical resolves even
when its agent sends no more results."""

from django.db import migrations

from governance.kernel import schedules

KPI_ALERTS = schedules.Schedule(
    name="kpi alerts",
    task="agents.recheck_kpi_alerts",
    every_seconds=3600,
    description="Re-judges the KPIs with an open critical alert; those back above critical are resolved.",
)


def forwards(apps, schema_editor):
    schedules.seed(apps, [KPI_ALERTS])


class Migration(migrations.Migration):
    dependencies = [("agents", "0011_kpi_alerts")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
