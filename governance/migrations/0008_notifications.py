"""Notifications: rules, compliance watches, deliveries, and the backstop that resends overdue ones."""

import django.contrib.postgres.fields
import django.db.models.deletion
from django.db import migrations, models
from django.utils import timezone

# Frozen here (governance.kernel.schedules as of issue 35): a migration does the same whatever the code becomes.
SCHEDULES = [
    (
        "notifications resend",
        "notifications.resend_due",
        300,
        "Queues again the notification deliveries whose attempt is overdue (a broker outage, a lost worker).",
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
        ("agents", "0001_initial"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
        ("governance", "0007_retention"),
    ]

    operations = [
        migrations.CreateModel(
            name="NotificationRule",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("name", models.CharField(max_length=100, unique=True)),
                (
                    "events",
                    django.contrib.postgres.fields.ArrayField(
                        base_field=models.CharField(
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
                        help_text="One or several.",
                        size=None,
                    ),
                ),
                (
                    "domain",
                    models.CharField(
                        blank=True, help_text="Only agents of this domain; empty: every domain.", max_length=20
                    ),
                ),
                (
                    "channel",
                    models.CharField(
                        choices=[
                            ("slack", "Slack-compatible webhook"),
                            ("signed_webhook", "Signed JSON webhook"),
                            ("email", "Email"),
                        ],
                        max_length=20,
                    ),
                ),
                (
                    "target",
                    models.CharField(
                        help_text="The webhook's http(s) URL, or email addresses separated by commas.", max_length=1000
                    ),
                ),
                (
                    "threshold_percent",
                    models.PositiveSmallIntegerField(
                        blank=True,
                        help_text="Compliance rules: told once when compliance drops below this percentage.",
                        null=True,
                    ),
                ),
                (
                    "window_checks",
                    models.PositiveIntegerField(
                        default=20, help_text="Compliance rules: measured over this many latest checks of a contract."
                    ),
                ),
                ("secret_version", models.PositiveIntegerField(default=1, editable=False)),
                ("enabled", models.BooleanField(default=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("created_by", models.CharField(editable=False, max_length=200)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "agent",
                    models.ForeignKey(
                        blank=True,
                        help_text="Only this agent's events; empty: every agent.",
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="agents.agent",
                    ),
                ),
            ],
            options={
                "ordering": ["name"],
            },
        ),
        migrations.CreateModel(
            name="Delivery",
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
                    "channel",
                    models.CharField(
                        choices=[
                            ("slack", "Slack-compatible webhook"),
                            ("signed_webhook", "Signed JSON webhook"),
                            ("email", "Email"),
                        ],
                        max_length=20,
                    ),
                ),
                ("target", models.CharField(max_length=1000)),
                (
                    "payload",
                    models.JSONField(help_text="The JSON sent (email: subject and body): links and short facts only."),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("pending", "Pending"),
                            ("sent", "Sent"),
                            ("failed", "Failed"),
                            ("gave_up", "Gave up"),
                        ],
                        default="pending",
                        max_length=10,
                    ),
                ),
                ("attempts", models.PositiveIntegerField(default=0)),
                ("last_error", models.CharField(blank=True, max_length=300)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("next_attempt_at", models.DateTimeField()),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
                (
                    "rule",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="deliveries",
                        to="governance.notificationrule",
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "deliveries",
                "ordering": ["-created_at"],
                "indexes": [models.Index(fields=["status", "next_attempt_at"], name="delivery_due")],
            },
        ),
        migrations.CreateModel(
            name="ComplianceWatch",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("contract_name", models.CharField(max_length=100)),
                ("below", models.BooleanField(default=False)),
                ("percent", models.FloatField()),
                ("changed_at", models.DateTimeField()),
                (
                    "rule",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="watches",
                        to="governance.notificationrule",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("rule", "contract_name"), name="one_watch_per_rule_contract")
                ],
            },
        ),
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
