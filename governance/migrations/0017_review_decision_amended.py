from django.db import migrations, models


class Migration(migrations.Migration):
    """A reviewer may approve an edited tool call: the decision keeps the payload approved instead
    of the item's, and its hash. Both additive (``db_default`` for the hash, so the previous release
    keeps recording decisions while this one migrates)."""

    dependencies = [
        ("governance", "0016_audit_definition_actions"),
    ]

    operations = [
        migrations.AddField(
            model_name="reviewdecision",
            name="amended",
            field=models.JSONField(blank=True, help_text="The payload approved instead of the item's", null=True),
        ),
        migrations.AddField(
            model_name="reviewdecision",
            name="amended_hash",
            field=models.CharField(
                blank=True,
                db_default="",
                default="",
                help_text="SHA-256 of the amended payload; empty when approved as asked",
                max_length=64,
            ),
        ),
    ]
