from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("ai_sessions", "0006_provider_calls"),
    ]

    operations = [
        migrations.AddField(
            model_name="aisession",
            name="story",
            field=models.CharField(
                blank=True, max_length=100, help_text="The story the session works on: its step-0 memory block"
            ),
        ),
        migrations.AddField(
            model_name="aisession",
            name="domain",
            field=models.CharField(blank=True, max_length=100, help_text="The memory domain (else the agent's)"),
        ),
        migrations.AddField(
            model_name="aisession",
            name="project",
            field=models.CharField(blank=True, max_length=100, help_text="The memory project of the step-0 block"),
        ),
        migrations.AddField(
            model_name="providercall",
            name="metadata",
            field=models.JSONField(
                blank=True, default=dict, help_text="The answer's executionMetadata: model, response id, durations"
            ),
        ),
    ]
