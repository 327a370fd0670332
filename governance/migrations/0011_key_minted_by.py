"""Who minted an operator key for its user, and the same on each decision made with it.

Expand (docs/upgrade.md): both columns have a database default, so the previous release, still
serving while this runs, keeps issuing keys and recording decisions without naming them."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("governance", "0010_admin_plurals"),
    ]

    operations = [
        migrations.AddField(
            model_name="apikey",
            name="minted_by",
            field=models.CharField(
                blank=True,
                db_default="",
                default="",
                editable=False,
                help_text="Who minted this operator key for its user (a superuser, the create_api_key command); empty when the user minted it.",
                max_length=200,
            ),
        ),
        migrations.AddField(
            model_name="reviewdecision",
            name="minted_by",
            field=models.CharField(
                blank=True,
                db_default="",
                default="",
                help_text="minter of the decider's key, if not them",
                max_length=200,
            ),
        ),
    ]
