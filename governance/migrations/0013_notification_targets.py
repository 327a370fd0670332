"""Notification rules may be marked internal (the outbound guard's private-network allowance), and a
delivery keeps the receiver's HTTP status and a failure category instead of an error text, which
held the start of whatever the receiver answered and was shown to every Viewer.

Expand, then contract (docs/upgrade.md): the new columns have database defaults, so the previous
release, still serving while this runs, keeps inserting rows; ``last_error`` leaves the model but
its column stays, with a database default and emptied here, until the next release drops it.
The schema changes come before the rows are updated: PostgreSQL refuses to alter a table with
updates still pending their deferred constraint checks in the same transaction.
"""

from django.db import migrations, models

# What the old texts said, as a status and a category; then the text is emptied.
CATEGORIES = """
UPDATE governance_delivery SET
    last_status = substring(last_error FROM '^HTTP ([0-9]{3})')::smallint,
    last_category = CASE
        WHEN last_error ~ '^HTTP [0-9]{3}' THEN 'http_error'
        WHEN last_error LIKE 'unreachable: timed out%' THEN 'timeout'
        WHEN last_error LIKE 'mail:%' THEN 'mail'
        WHEN last_error LIKE 'the rule was disabled%' THEN 'rule_disabled'
        ELSE 'connection'
    END,
    last_error = ''
WHERE last_error <> ''
"""


class Migration(migrations.Migration):
    dependencies = [
        ("governance", "0012_review_expiry_schedule"),
    ]

    operations = [
        migrations.AddField(
            model_name="notificationrule",
            name="internal",
            field=models.BooleanField(
                db_default=False,
                default=False,
                help_text="The receiver is on your own network: allow plain http and private or loopback addresses "
                "(cloud metadata addresses stay refused).",
            ),
        ),
        migrations.AlterField(
            model_name="notificationrule",
            name="target",
            field=models.CharField(
                help_text="The webhook's https URL (no query string), or email addresses separated by commas.",
                max_length=1000,
            ),
        ),
        migrations.AddField(
            model_name="delivery",
            name="last_status",
            field=models.PositiveSmallIntegerField(
                blank=True, help_text="The HTTP status of the receiver's last answer, when it answered.", null=True
            ),
        ),
        migrations.AddField(
            model_name="delivery",
            name="last_category",
            field=models.CharField(
                blank=True,
                choices=[
                    ("http_error", "The receiver answered an error status"),
                    ("refused_address", "The outbound guard refused the address"),
                    ("configuration", "The target is not a usable URL"),
                    ("timeout", "The receiver did not answer in time"),
                    ("connection", "The receiver could not be reached"),
                    ("mail", "The mail server could not take it"),
                    ("rule_disabled", "The rule was disabled before this was sent"),
                    ("invalid", "The stored delivery could not be sent (see the server log)"),
                ],
                db_default="",
                default="",
                max_length=20,
            ),
        ),
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.AlterField(
                    model_name="delivery",
                    name="last_error",
                    field=models.CharField(blank=True, db_default="", max_length=300),
                ),
            ],
            state_operations=[migrations.RemoveField(model_name="delivery", name="last_error")],
        ),
        migrations.RunSQL(CATEGORIES, migrations.RunSQL.noop),
    ]
