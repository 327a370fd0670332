from django.db import migrations, models


class Migration(migrations.Migration):
    """A grant a reviewer approved with edited arguments is bound to those; the hash of the ones
    the agent asked for is kept beside them (empty otherwise, ``db_default`` for grants the
    previous release opens meanwhile), indexed for the rows that have one."""

    dependencies = [
        ("agents", "0017_named_schemas"),
    ]

    operations = [
        migrations.AddField(
            model_name="toolgrant",
            name="requested_hash",
            field=models.CharField(
                blank=True,
                db_default="",
                default="",
                help_text="The hash of the arguments asked for, when a reviewer approved edited ones; else empty",
                max_length=64,
            ),
        ),
        migrations.AddIndex(
            model_name="toolgrant",
            index=models.Index(
                condition=models.Q(("requested_hash", ""), _negated=True),
                fields=["agent", "tool_id", "requested_hash"],
                name="tool_grant_edited_lookup",
            ),
        ),
    ]
