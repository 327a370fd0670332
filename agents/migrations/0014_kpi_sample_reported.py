"""KPI samples say whether they are the agent's own figure (``reported``).

Until now a number an agent put in a result's ``metrics`` was stored as the KPI's sample in place of
the derived one. Samples stored so are flagged reported here: a sample whose job's output reports
that metric as a number. A job that sent several results keeps only its last output, so this reads
the flag from the last result (docs/upgrade.md)."""

from django.db import migrations, models


def flag_reported(apps, schema_editor):
    sample, job = apps.get_model("agents", "KpiSample"), apps.get_model("agents", "Job")
    quote = schema_editor.quote_name
    schema_editor.execute(
        f"UPDATE {quote(sample._meta.db_table)} s SET reported = true FROM {quote(job._meta.db_table)} j"
        f" WHERE s.job_id = j.{quote(job._meta.pk.column)}"
        " AND jsonb_typeof(j.output -> 'metrics' -> s.metric_id) = 'number'"
    )


class Migration(migrations.Migration):
    dependencies = [("agents", "0013_tool_call_age")]

    operations = [
        migrations.AddField(
            model_name="kpisample",
            name="reported",
            field=models.BooleanField(default=False, help_text="The agent's own figure, not measured by the platform"),
        ),
        migrations.RunPython(flag_reported, migrations.RunPython.noop),
    ]
