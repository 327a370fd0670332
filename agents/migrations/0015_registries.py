"""The registries of domains, job intents, entity types and agent roles (agents/models/registries.py):
agents' role and domain and triggers' intent and entity type are values of them now, no longer
choices of the seeds' enums, and as long as a registry value may be (50 characters)."""

import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0014_kpi_sample_reported"),
    ]

    operations = [
        migrations.CreateModel(
            name="AgentRole",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "value",
                    models.CharField(
                        help_text="What manifests, jobs and learnings write: lowercase letters, digits, _ and -, starting with a letter. Never changes once added.",
                        max_length=50,
                        unique=True,
                        validators=[
                            django.core.validators.RegexValidator(
                                "^[a-z][a-z0-9_-]*$", "Use lowercase letters, digits, _ and -, starting with a letter."
                            )
                        ],
                    ),
                ),
                ("label", models.CharField(help_text="What pages and forms show.", max_length=200)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("created_by", models.CharField(max_length=200)),
                (
                    "retired_at",
                    models.DateTimeField(
                        blank=True,
                        help_text="Retired: what already uses the value keeps it; nothing new may.",
                        null=True,
                    ),
                ),
                ("retired_by", models.CharField(blank=True, max_length=200)),
            ],
            options={
                "verbose_name": "agent role",
                "ordering": ["value"],
                "abstract": False,
            },
        ),
        migrations.CreateModel(
            name="Domain",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "value",
                    models.CharField(
                        help_text="What manifests, jobs and learnings write: lowercase letters, digits, _ and -, starting with a letter. Never changes once added.",
                        max_length=50,
                        unique=True,
                        validators=[
                            django.core.validators.RegexValidator(
                                "^[a-z][a-z0-9_-]*$", "Use lowercase letters, digits, _ and -, starting with a letter."
                            )
                        ],
                    ),
                ),
                ("label", models.CharField(help_text="What pages and forms show.", max_length=200)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("created_by", models.CharField(max_length=200)),
                (
                    "retired_at",
                    models.DateTimeField(
                        blank=True,
                        help_text="Retired: what already uses the value keeps it; nothing new may.",
                        null=True,
                    ),
                ),
                ("retired_by", models.CharField(blank=True, max_length=200)),
            ],
            options={
                "verbose_name": "domain",
                "ordering": ["value"],
                "abstract": False,
            },
        ),
        migrations.CreateModel(
            name="EntityType",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "value",
                    models.CharField(
                        help_text="What manifests, jobs and learnings write: lowercase letters, digits, _ and -, starting with a letter. Never changes once added.",
                        max_length=50,
                        unique=True,
                        validators=[
                            django.core.validators.RegexValidator(
                                "^[a-z][a-z0-9_-]*$", "Use lowercase letters, digits, _ and -, starting with a letter."
                            )
                        ],
                    ),
                ),
                ("label", models.CharField(help_text="What pages and forms show.", max_length=200)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("created_by", models.CharField(max_length=200)),
                (
                    "retired_at",
                    models.DateTimeField(
                        blank=True,
                        help_text="Retired: what already uses the value keeps it; nothing new may.",
                        null=True,
                    ),
                ),
                ("retired_by", models.CharField(blank=True, max_length=200)),
            ],
            options={
                "verbose_name": "entity type",
                "ordering": ["value"],
                "abstract": False,
            },
        ),
        migrations.CreateModel(
            name="Intent",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "value",
                    models.CharField(
                        help_text="What manifests, jobs and learnings write: lowercase letters, digits, _ and -, starting with a letter. Never changes once added.",
                        max_length=50,
                        unique=True,
                        validators=[
                            django.core.validators.RegexValidator(
                                "^[a-z][a-z0-9_-]*$", "Use lowercase letters, digits, _ and -, starting with a letter."
                            )
                        ],
                    ),
                ),
                ("label", models.CharField(help_text="What pages and forms show.", max_length=200)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("created_by", models.CharField(max_length=200)),
                (
                    "retired_at",
                    models.DateTimeField(
                        blank=True,
                        help_text="Retired: what already uses the value keeps it; nothing new may.",
                        null=True,
                    ),
                ),
                ("retired_by", models.CharField(blank=True, max_length=200)),
            ],
            options={
                "verbose_name": "job intent",
                "ordering": ["value"],
                "abstract": False,
            },
        ),
        migrations.AlterField(
            model_name="agent",
            name="domain",
            field=models.CharField(blank=True, help_text="A value of the domains registry.", max_length=50),
        ),
        migrations.AlterField(
            model_name="agent",
            name="role",
            field=models.CharField(blank=True, help_text="A value of the roles registry.", max_length=50),
        ),
        migrations.AlterField(
            model_name="jobtrigger",
            name="entity_type",
            field=models.CharField(help_text="A value of the entity types registry.", max_length=50),
        ),
        migrations.AlterField(
            model_name="jobtrigger",
            name="intent",
            field=models.CharField(help_text="A value of the intents registry.", max_length=50),
        ),
    ]
