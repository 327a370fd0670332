"""Upstream MCP servers the gateway stands in front of (registered by operators, never by agents),
and the log of every call an agent made through the gateway."""

from __future__ import annotations

import shlex

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models

from gateway.querysets import GatewayCallQuerySet
from governance.kernel import secrets

SERVER_NAME = RegexValidator(
    r"^[a-z0-9][a-z0-9-]*$", "Lower-case letters, digits and dashes, as in mcp__<name>__<tool>."
)


class UpstreamServer(models.Model):
    """An MCP server whose tools agents reach as ``mcp__<name>__<tool>``, when their active
    manifest grants them: over Streamable HTTP at ``url``, or a ``command`` each web process
    starts and talks to over stdio. Its credential is the name of an environment variable of the
    web processes: sent as a bearer token over HTTP, passed in the environment of a stdio command
    (which gets nothing else of the server's environment). The value is never stored or shown."""

    class Transport(models.TextChoices):
        HTTP = "http", "Streamable HTTP"
        STDIO = "stdio", "stdio command"

    name = models.CharField(max_length=50, unique=True, validators=[SERVER_NAME])
    transport = models.CharField(max_length=5, choices=Transport.choices, default=Transport.HTTP)
    url = models.URLField(
        max_length=500, blank=True, help_text="Streamable HTTP: the server's endpoint, e.g. http://10.0.0.5:8080/mcp"
    )
    command = models.CharField(
        max_length=1000,
        blank=True,
        help_text="stdio: the command line the web processes run, e.g. npx -y @supabase/mcp-server-supabase",
    )
    secret_name = models.CharField(
        max_length=100,
        blank=True,
        help_text="Environment variable with the upstream's credential (or <NAME>_FILE: a file with it); empty: none",
    )
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=(models.Q(transport="http") & ~models.Q(url=""))
                | (models.Q(transport="stdio") & ~models.Q(command="")),
                name="upstream_has_an_address",
            )
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        secret_error = secrets.name_error(self.secret_name, prefix=secrets.UPSTREAM_TOKEN_PREFIX)
        if secret_error:
            raise ValidationError({"secret_name": secret_error})
        if self.transport == self.Transport.HTTP and not self.url:
            raise ValidationError({"url": "A Streamable HTTP server needs its URL."})
        if self.transport == self.Transport.STDIO:
            try:
                argv = shlex.split(self.command)
            except ValueError as exc:
                raise ValidationError({"command": f"Not a command line: {exc}."}) from exc
            if not argv:
                raise ValidationError({"command": "A stdio server needs its command."})

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.command)

    @property
    def secret_status(self) -> str:
        """ "set", "missing" or "" (none named): all an operator is shown of the credential."""
        return secrets.status(self.secret_name, prefix=secrets.UPSTREAM_TOKEN_PREFIX)

    @property
    def address(self) -> str:
        """Where the server is, as an operator reads it."""
        return self.url if self.transport == self.Transport.HTTP else self.command


class GatewayCall(models.Model):
    """One ``tools/call`` of an upstream tool through the gateway, refused or forwarded.

    Append-only: it is the audit of gateway calls (who, which tool, with which arguments' hash,
    what came of it). A forwarded call also has the :class:`agents.ToolCall` the rate limit counts.
    """

    class Outcome(models.TextChoices):
        OK = "ok", "OK"
        TOOL_ERROR = "tool_error", "Tool error"
        UPSTREAM_FAILED = "upstream_failed", "Upstream failed"
        REFUSED = "refused", "Refused"
        PENDING = "pending", "Waiting for approval"
        DRY_RUN = "dry_run", "Dry run (not forwarded)"

    agent = models.ForeignKey("agents.Agent", on_delete=models.PROTECT, related_name="gateway_calls")
    tool_id = models.CharField(max_length=200)
    server = models.ForeignKey(UpstreamServer, null=True, blank=True, on_delete=models.PROTECT, related_name="calls")
    job = models.ForeignKey("agents.Job", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    session = models.ForeignKey(
        "ai_sessions.AISession", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    arguments_hash = models.CharField(max_length=64)
    arguments = models.JSONField(null=True, blank=True, help_text="Empty when GATEWAY_STORE_ARGUMENTS is off")
    called_at = models.DateTimeField()
    latency_ms = models.FloatField(null=True, blank=True, help_text="The upstream's time; empty when not forwarded")
    outcome = models.CharField(max_length=20, choices=Outcome.choices)
    refusal = models.CharField(max_length=50, blank=True, help_text="Why the gateway refused (RateLimited, ...)")
    error_class = models.CharField(max_length=100, blank=True, help_text="The upstream failure's class")
    # The rate limit's row: retention prunes it once old (RETENTION_TOOL_CALLS_DAYS); this row, which
    # names the agent, tool, job and outcome itself, stays as the audit.
    tool_call = models.OneToOneField(
        "agents.ToolCall", null=True, blank=True, on_delete=models.SET_NULL, related_name="gateway_call"
    )
    contract_check = models.OneToOneField(
        "governance.ContractCheck", null=True, blank=True, on_delete=models.PROTECT, related_name="gateway_call"
    )

    objects = GatewayCallQuerySet.as_manager()

    class Meta:
        ordering = ["-called_at", "-id"]
        indexes = [
            models.Index(fields=["-called_at"], name="gateway_call_recent"),
            models.Index(fields=["agent", "-called_at"], name="gateway_call_agent"),
            models.Index(fields=["tool_id", "-called_at"], name="gateway_call_tool"),
            models.Index(
                fields=["called_at"], name="gateway_call_args_kept", condition=models.Q(arguments__isnull=False)
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tool_id} {self.outcome} at {self.called_at:%Y-%m-%d %H:%M:%S}"
