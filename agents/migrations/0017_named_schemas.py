"""The registry of named schemas (agents/models/schemas.py), with the names seed 001's example and
the shipped manifests use without defining, so they still load unchanged now that a name resolving
nowhere is refused; and each manifest version's snapshot of what its names resolved to. Versions
stored before keep an empty snapshot: their undefined names stay unchecked (never a silent change of
an active contract); loading a new version resolves them. The definitions are written out here, not
imported: a migration must do the same thing whatever the code becomes."""

import django.core.validators
from django.db import migrations, models

SEED = {
    "VLevelScoreSchema": (
        "V-level score",
        "Seed 001's agent.seo.vlevel output: the V-level (V1 to V5) one URL scored.",
        {"url": "z.string().url()", "level": "z.enum(['V1', 'V2', 'V3', 'V4', 'V5'])"},
    ),
    "VLevelOptionsSchema": (
        "V-level options",
        "Seed 001's agent.seo.vlevel optional configuration; the seed names no settings, so any object.",
        "z.record(z.unknown())",
    ),
    "RecommendationSchema": (
        "Recommendation",
        "Seed 001's agent.seo.vlevel improvement recommendation: text.",
        "z.string().min(1)",
    ),
    "EscalationSchema": (
        "Escalation",
        "What an escalated job hands its target agent (agents/escalations.py): the expressions that fired.",
        {
            "fromJob": "z.string().optional()",
            "fromAgent": "z.string().optional()",
            "triggers": "z.array(z.string())",
            "output": "z.unknown().optional()",
        },
    ),
    "RagDocumentSchema": (
        "RAG document",
        "A document to index; seed 001 defers its fields to the RAG seed, so any object.",
        "z.record(z.unknown())",
    ),
}


def seed(apps, schema_editor):
    model = apps.get_model("agents", "NamedSchema")
    model.objects.bulk_create(
        [
            model(name=name, label=label, description=description, definition=definition, created_by="system")
            for name, (label, description, definition) in SEED.items()
        ],
        ignore_conflicts=True,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0016_seed_registries"),
    ]

    operations = [
        migrations.CreateModel(
            name="NamedSchema",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "name",
                    models.CharField(
                        help_text="What manifests write in a type (VLevelScoreSchema). Never changes once added.",
                        max_length=100,
                        unique=True,
                        validators=[
                            django.core.validators.RegexValidator(
                                "^[A-Za-z_][A-Za-z0-9_]*$", "Use letters, digits and _, not starting with a digit."
                            )
                        ],
                    ),
                ),
                (
                    "definition",
                    models.JSONField(
                        help_text="A type expression (z.array(z.string())), or an object of field name -> type expression."
                    ),
                ),
                ("label", models.CharField(help_text="What pages and forms show.", max_length=200)),
                ("description", models.TextField(blank=True, help_text="What a value of it is, for manifest authors.")),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("created_by", models.CharField(max_length=200)),
                (
                    "retired_at",
                    models.DateTimeField(
                        blank=True,
                        help_text="Retired: manifests stored before keep it; new loads may not name it.",
                        null=True,
                    ),
                ),
                ("retired_by", models.CharField(blank=True, max_length=200)),
            ],
            options={
                "verbose_name": "named schema",
                "ordering": ["name"],
            },
        ),
        migrations.AddField(
            model_name="agentmanifest",
            name="registry_schemas",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="The named schemas' definitions the document's names resolved to when it was stored.",
            ),
        ),
        migrations.RunPython(seed, migrations.RunPython.noop),
    ]
