"""Digests of notifications: a rule's window (``digest_seconds``, additive with a database default
so the previous release keeps adding rules while this one migrates), the events it holds, and the
beat entry that tells each window."""

import django.core.validators
import django.db.models.deletion
from django.db import migrations, models
from django.utils import timezone

# Frozen here (governance.kernel.schedules as of issue 35): a migration does the same whatever the code becomes.
SCHEDULES = [
    (
        "notification digests",
        "notifications.send_digests",
        10,
        "Tells each notification rule with a digest window what it held once its window is over: one "
        "message per rule and window.",
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
        ("django_celery_beat", "0019_alter_periodictasks_options"),
        ("governance", "0017_review_decision_amended"),
    ]

    operations = [
        migrations.AddField(
            model_name="notificationrule",
            name="digest_seconds",
            field=models.PositiveIntegerField(
                db_default=0,
                default=0,
                help_text="Tell at most one message per this many seconds, summing up what happened (60: one a minute); 0: each event at once. Escalations always go at once.",
                validators=[django.core.validators.MaxValueValidator(86400)],
            ),
        ),
        migrations.AlterField(
            model_name="delivery",
            name="event",
            field=models.CharField(
                choices=[
                    ("inbox.validation", "New inbox item: validation request"),
                    ("inbox.communication", "New inbox item: communication request"),
                    ("inbox.tool_approval", "New inbox item: tool approval"),
                    ("inbox.promotion", "New inbox item: learning promotion"),
                    ("escalation", "Escalation"),
                    ("kpi.critical", "KPI turned critical"),
                    ("contract.compliance_below", "Contract compliance below threshold"),
                    ("digest", "Digest of several events"),
                ],
                max_length=40,
            ),
        ),
        migrations.CreateModel(
            name="DigestEntry",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "event",
                    models.CharField(
                        choices=[
                            ("inbox.validation", "New inbox item: validation request"),
                            ("inbox.communication", "New inbox item: communication request"),
                            ("inbox.tool_approval", "New inbox item: tool approval"),
                            ("inbox.promotion", "New inbox item: learning promotion"),
                            ("escalation", "Escalation"),
                            ("kpi.critical", "KPI turned critical"),
                            ("contract.compliance_below", "Contract compliance below threshold"),
                        ],
                        max_length=40,
                    ),
                ),
                (
                    "agent",
                    models.CharField(blank=True, help_text="The agent of the event; empty: none.", max_length=200),
                ),
                (
                    "notice",
                    models.JSONField(
                        help_text="The event as it would have been told alone: title, link, facts, summary."
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "delivery",
                    models.ForeignKey(
                        blank=True,
                        help_text="The digest that told it; empty: waiting for the rule's window to end.",
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="entries",
                        to="governance.delivery",
                    ),
                ),
                (
                    "rule",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="digest_entries",
                        to="governance.notificationrule",
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "digest entries",
                "ordering": ["pk"],
                "indexes": [
                    models.Index(
                        condition=models.Q(("delivery", None)),
                        fields=["rule", "created_at"],
                        name="digest_entry_waiting",
                    )
                ],
            },
        ),
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
