"""stdio commands are named by the deployment (GATEWAY_STDIO_COMMANDS) and run in the workers;
HTTP upstreams pass the outbound guard, private addresses only when marked ``internal``.

A stdio server of an earlier release holds a command line an Admin typed, which every web process
ran. It is not carried over: each one is disabled, its ``disabled_reason`` telling the operator to
have the command allowed and pick its name, and a ``gateway.upstream_disabled`` audit row keeps what it
ran. Nothing runs it again until an operator does so. Going backwards leaves the rows disabled.
"""

import uuid

import django.db.models.deletion
from django.db import migrations, models

REASON = (
    "Disabled by the upgrade: a stdio server now runs one of the commands the deployment allows "
    "(GATEWAY_STDIO_COMMANDS), never a command line typed here. It ran: {command}. Have that command "
    "added to GATEWAY_STDIO_COMMANDS, pick its name here, and enable the server again."
)


def disable_command_lines(apps, schema_editor):
    server_model = apps.get_model("gateway", "UpstreamServer")
    audit_model = apps.get_model("governance", "AuditEvent")
    for server in server_model.objects.filter(transport="stdio"):
        server.disabled_reason = REASON.format(command=server.command)[:1000]
        was_enabled, server.enabled = server.enabled, False
        server.save(update_fields=["enabled", "disabled_reason"])
        audit_model.objects.create(
            actor="system",
            action="gateway.upstream_disabled",
            target_type="gateway.upstreamserver",
            target_id=str(server.pk),
            data={"command": server.command, "was_enabled": was_enabled, "why": "stdio command lines are not allowed"},
        )


class Migration(migrations.Migration):
    dependencies = [
        ("gateway", "0004_tool_call_pruned"),
        ("governance", "0002_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="ToolListing",
            fields=[
                (
                    "server",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="listing",
                        serialize=False,
                        to="gateway.upstreamserver",
                    ),
                ),
                (
                    "command",
                    models.CharField(
                        help_text="The command listed: a server now naming another one is unlisted", max_length=1000
                    ),
                ),
                (
                    "tools",
                    models.JSONField(
                        default=list, help_text="The upstream's tools as MCP lists them; empty after a failure"
                    ),
                ),
                (
                    "error",
                    models.CharField(
                        blank=True, help_text="The failure's class, when the last listing failed", max_length=100
                    ),
                ),
                (
                    "answered_at",
                    models.DateTimeField(blank=True, help_text="When a worker last listed (or failed to)", null=True),
                ),
                (
                    "requested_at",
                    models.DateTimeField(blank=True, help_text="When a web process last asked a worker", null=True),
                ),
            ],
        ),
        migrations.AddField(
            model_name="upstreamserver",
            name="disabled_reason",
            field=models.CharField(
                blank=True, help_text="Why the platform disabled the server, and what to do about it", max_length=1000
            ),
        ),
        migrations.AddField(
            model_name="upstreamserver",
            name="internal",
            field=models.BooleanField(
                default=False,
                help_text="Allow plain http and private/loopback addresses (a server on the local network)",
            ),
        ),
        migrations.AlterField(
            model_name="upstreamserver",
            name="command",
            field=models.CharField(
                blank=True,
                help_text="stdio: one of the commands the deployment allows (GATEWAY_STDIO_COMMANDS), by name",
                max_length=1000,
            ),
        ),
        migrations.AlterField(
            model_name="upstreamserver",
            name="url",
            field=models.URLField(
                blank=True,
                help_text="Streamable HTTP: its endpoint, e.g. https://mcp.example.com/mcp (https only, unless internal)",
                max_length=500,
            ),
        ),
        migrations.CreateModel(
            name="StdioCall",
            fields=[
                ("id", models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ("tool", models.CharField(max_length=200)),
                ("arguments", models.JSONField(default=dict)),
                ("created_at", models.DateTimeField(auto_now_add=True, db_index=True)),
                ("started_at", models.DateTimeField(blank=True, null=True)),
                ("answered_at", models.DateTimeField(blank=True, null=True)),
                ("result", models.JSONField(blank=True, help_text="The CallToolResult as MCP sends it", null=True)),
                (
                    "error",
                    models.CharField(
                        blank=True, help_text="The failure's class, when there is no result", max_length=100
                    ),
                ),
                (
                    "server",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="gateway.upstreamserver"
                    ),
                ),
            ],
        ),
        migrations.RunPython(disable_command_lines, migrations.RunPython.noop),
    ]
