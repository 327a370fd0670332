"""Daily promotion and eviction runs, and the hourly embeddings catch-up."""

from django.db import migrations
from django.utils import timezone

# Frozen here (governance.kernel.schedules as of issue 35): a migration does the same whatever the code becomes.
SCHEDULES = [
    (
        "memory promotions",
        "memory.promote",
        24 * 3600,
        "Recomputes reuse scores, then proposes promotions.",
    ),
    (
        "memory eviction",
        "memory.evict",
        24 * 3600,
        "Archives learnings older than 56 days never injected.",
    ),
    (
        "memory embeddings catch-up",
        "memory.embed_missing",
        3600,
        "Embeds rows that have no vector yet.",
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
    dependencies = [
        ("memory", "0003_scoring_runs"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
