"""Seed 002 to the letter (issue 34, point 6): transition durations in whole seconds, and fact
sentiments limited to the seed's values.

Forward-only (docs/upgrade.md). Stored float durations are rounded to the nearest second before
the column becomes an integer. Sentiment choices are not a database constraint: preferences or
events already stored with a value the seed does not have (a "neutral" or "mixed" preference, a
"mixed" event) stay as they are, readable, until an operator corrects them (docs/upgrade.md).
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0016_injection_learning_key"),
    ]

    operations = [
        migrations.RunSQL(
            "UPDATE memory_emotiontransition SET avg_duration_seconds = round(avg_duration_seconds::numeric)",
            reverse_sql=migrations.RunSQL.noop,
        ),
        migrations.AlterField(
            model_name="emotiontransition",
            name="avg_duration_seconds",
            field=models.PositiveIntegerField(default=0, help_text="Whole seconds, as the seed writes them"),
        ),
        migrations.AlterField(
            model_name="lifeevent",
            name="sentiment",
            field=models.CharField(
                choices=[("positive", "Positive"), ("negative", "Negative"), ("neutral", "Neutral")], max_length=10
            ),
        ),
        migrations.AlterField(
            model_name="preference",
            name="sentiment",
            field=models.CharField(choices=[("positive", "Positive"), ("negative", "Negative")], max_length=10),
        ),
    ]
