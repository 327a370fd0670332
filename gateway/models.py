"""Upstream MCP servers the gateway stands in front of (registered by operators, never by agents),
what the workers learn of and answer for the stdio ones, and the log of every call an agent made
through the gateway."""

from __future__ import annotations

import shlex
import uuid

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models

from gateway import commands
from gateway.querysets import GatewayCallQuerySet
from governance.kernel import secrets
from sessions.providers import outbound

SERVER_NAME = RegexValidator(
    r"^[a-z0-9][a-z0-9-]*$", "Lower-case letters, digits and dashes, as in mcp__<name>__<tool>."
)


def stdio_commands() -> dict[str, commands.StdioCommand]:
    """The commands this deployment allows stdio upstreams to run (GATEWAY_STDIO_COMMANDS)."""
    return commands.allowed(settings.GATEWAY_STDIO_COMMANDS)


class UpstreamServer(models.Model):
    """An MCP server whose tools agents reach as ``mcp__<name>__<tool>``, when their active
    manifest grants them: over Streamable HTTP at ``url``, or over stdio with one of the commands
    the deployment allows (``command`` names it; the Celery workers run it, never a web process).
    A URL passes the outbound guard of provider profiles when saved and again at each connection;
    ``internal`` is the operator saying the server lives on a private network (plain http and
    private or loopback addresses, never a cloud metadata address). Its credential is the name of
    an environment variable: sent as a bearer token over HTTP, passed in the environment of a
    stdio command. The value is never stored or shown."""

    class Transport(models.TextChoices):
        HTTP = "http", "Streamable HTTP"
        STDIO = "stdio", "stdio command"

    class ResultSecrets(models.TextChoices):
        REDACT = "redact", "Redact them"
        BLOCK = "block", "Block the result"
        LOG = "log", "Only log them"

    name = models.CharField(max_length=50, unique=True, validators=[SERVER_NAME])
    transport = models.CharField(max_length=5, choices=Transport.choices, default=Transport.HTTP)
    url = models.URLField(
        max_length=500,
        blank=True,
        help_text="Streamable HTTP: its endpoint, e.g. https://mcp.example.com/mcp (https only, unless internal)",
    )
    internal = models.BooleanField(
        default=False, help_text="Allow plain http and private/loopback addresses (a server on the local network)"
    )
    # Up to 1000 characters: rows of earlier releases kept a command line here (now disabled).
    command = models.CharField(
        max_length=1000,
        blank=True,
        help_text="stdio: one of the commands the deployment allows (GATEWAY_STDIO_COMMANDS), by name",
    )
    secret_name = models.CharField(
        max_length=100,
        blank=True,
        help_text="Environment variable with the upstream's credential (or <NAME>_FILE: a file with it); empty: none",
    )
    result_secrets = models.CharField(
        max_length=6,
        choices=ResultSecrets.choices,
        default=ResultSecrets.REDACT,
        help_text=(
            "Secrets found in a tool's result (credentials, the plane's own secrets, high-entropy tokens): "
            "redact replaces each with a marker, block answers the agent a tool error without the result, "
            "log passes it unchanged. The call log counts them in every case, never their values"
        ),
    )
    enabled = models.BooleanField(default=True)
    disabled_reason = models.CharField(
        max_length=1000, blank=True, help_text="Why the platform disabled the server, and what to do about it"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    pinned_at = models.DateTimeField(
        null=True,
        editable=False,
        help_text="When the tools it first listed were pinned under its registration: since then, "
        "a definition that changes, appears or disappears waits for a reviewer (gateway.pins)",
    )

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
        if self.transport == self.Transport.HTTP:
            self._check_url()
        elif self.stdio_command is None:
            names = ", ".join(sorted(stdio_commands())) or "none: set GATEWAY_STDIO_COMMANDS"
            raise ValidationError(
                {"command": f"Name one of the stdio commands this deployment allows ({names}), never a command line."}
            )

    def _check_url(self) -> None:
        """The outbound guard, name resolution included, so an operator learns at once that an
        address is refused; it runs again at every connection, since DNS answers change."""
        if not self.url:
            raise ValidationError({"url": "A Streamable HTTP server needs its URL."})
        try:
            outbound.check(self.url, internal=self.internal)
        except outbound.OutboundRefused as exc:
            raise ValidationError({"url": f"{self.url}: {exc}"}) from exc
        except (OSError, UnicodeError) as exc:  # socket.gaierror is an OSError
            raise ValidationError({"url": f"{self.url}: the host name does not resolve ({exc})"}) from exc

    @property
    def stdio_command(self) -> commands.StdioCommand | None:
        """The allowed command this server names; None for a name the deployment does not allow
        (or no longer does), or a command line an earlier release kept."""
        return stdio_commands().get(self.command) if self.transport == self.Transport.STDIO else None

    @property
    def secret_status(self) -> str:
        """ "set", "missing" or "" (none named): all an operator is shown of the credential."""
        return secrets.status(self.secret_name, prefix=secrets.UPSTREAM_TOKEN_PREFIX)

    @property
    def address(self) -> str:
        """Where the server is, as an operator reads it."""
        if self.transport == self.Transport.HTTP:
            return self.url
        command = self.stdio_command
        if command is None:
            return f"{self.command} (not a command this deployment allows)"
        return f"{command.name}: {shlex.join(command.argv)}"


class ToolListing(models.Model):
    """What a worker last learned of a stdio upstream's tools. Web processes never start a
    command: ``tools/list`` and the servers page read this, and ask a worker to list again
    (``requested_at``) when it is old."""

    server = models.OneToOneField(UpstreamServer, on_delete=models.CASCADE, primary_key=True, related_name="listing")
    command = models.CharField(
        max_length=1000, help_text="The command listed: a server now naming another one is unlisted"
    )
    tools = models.JSONField(default=list, help_text="The upstream's tools as MCP lists them; empty after a failure")
    error = models.CharField(max_length=100, blank=True, help_text="The failure's class, when the last listing failed")
    answered_at = models.DateTimeField(null=True, blank=True, help_text="When a worker last listed (or failed to)")
    requested_at = models.DateTimeField(null=True, blank=True, help_text="When a web process last asked a worker")

    def __str__(self) -> str:
        return f"tools of {self.server_id}"


class StdioCall(models.Model):
    """One ``tools/call`` of a stdio upstream on its way: the web process that received it writes
    it, a worker runs it (at most once: ``started_at`` is claimed) and writes the answer, the web
    process reads it and deletes the row. Never an audit: ``GatewayCall`` is."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    server = models.ForeignKey(UpstreamServer, on_delete=models.CASCADE, related_name="+")
    tool = models.CharField(max_length=200)
    arguments = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    answered_at = models.DateTimeField(null=True, blank=True)
    result = models.JSONField(null=True, blank=True, help_text="The CallToolResult as MCP sends it")
    error = models.CharField(max_length=100, blank=True, help_text="The failure's class, when there is no result")

    def __str__(self) -> str:
        return f"{self.tool} ({self.pk})"


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
        # Admitted and forwarded; its outcome is written once the agent has the answer. A row that
        # stays so lost its outcome: the process ended between the answer and that write.
        FORWARDED = "forwarded", "Forwarded (no outcome recorded)"

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
    secrets_found = models.PositiveIntegerField(
        default=0, help_text="Secrets the result held (redacted, blocked or only logged as the upstream says)"
    )
    secret_kinds = ArrayField(
        models.CharField(max_length=50),
        default=list,
        blank=True,
        help_text="The detectors that found them (e.g. AWS Access Key), never the values",
    )
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


class ToolPin(models.Model):
    """One definition of an upstream tool the gateway has seen: the approved one agents see, or
    one waiting for a reviewer (changed, added, removed, or flagged by gateway/poison.py), or one
    a reviewer rejected, or one a later approval superseded (kept: the history of the tool).

    ``definition`` is the tool as MCP lists it, restricted to what a model reads (gateway/drift.py),
    ``sha256`` the digest of its canonical JSON; a removal has neither (approved, it says the tool
    is gone). One approved row per tool, and one row per tool and digest waiting or rejected: the
    same change seen by many listings opens one review item."""

    class Status(models.TextChoices):
        APPROVED = "approved", "Approved"
        PENDING = "pending", "Waiting for review"
        FLAGGED = "flagged", "Flagged, waiting for review"
        REJECTED = "rejected", "Rejected"
        SUPERSEDED = "superseded", "Superseded"

    class Change(models.TextChoices):
        FIRST = "first", "First listing"
        ADDED = "added", "Tool added"
        CHANGED = "changed", "Definition changed"
        REMOVED = "removed", "Tool removed"

    server = models.ForeignKey(UpstreamServer, on_delete=models.CASCADE, related_name="pins")
    tool = models.CharField(max_length=200, help_text="The upstream's own name of the tool")
    change = models.CharField(max_length=8, choices=Change.choices)
    definition = models.JSONField(null=True, blank=True, help_text="As listed; empty for a removal")
    sha256 = models.CharField(max_length=64, blank=True, help_text="Of the definition's canonical JSON")
    findings = models.JSONField(
        default=list, blank=True, help_text="What gateway/poison.py flagged: path, kind, excerpt"
    )
    status = models.CharField(max_length=10, choices=Status.choices)
    previous = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", help_text="The approved one then"
    )
    review_item = models.OneToOneField(
        "governance.ReviewItem", null=True, blank=True, on_delete=models.PROTECT, related_name="tool_pin"
    )
    seen_at = models.DateTimeField(auto_now_add=True)
    approved_by = models.CharField(max_length=200, blank=True)
    approved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["server", "tool", "-seen_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["server", "tool"], condition=models.Q(status="approved"), name="one_approved_definition"
            ),
            models.UniqueConstraint(
                fields=["server", "tool", "sha256"],
                condition=models.Q(status__in=["pending", "flagged", "rejected"]),
                name="one_open_definition_per_digest",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.server_id}/{self.tool} {self.status} ({self.sha256[:12] or 'removed'})"

    @property
    def tool_id(self) -> str:
        return f"mcp__{self.server.name}__{self.tool}"


class ToolTask(models.Model):
    """An upstream tool call made as an MCP task (2025-11-25 ``tools/call`` with ``task``): the
    agent gets the task at once and polls it. An approval-gated call's task is ``working`` while a
    reviewer decides; once approved, the next poll forwards the call (once: ``started_at`` is
    claimed) and the task is ``completed`` with the tool's result; a rejected or expired approval
    ends it ``failed`` with the reason. The arguments are kept only until the call is made."""

    class Status(models.TextChoices):
        WORKING = "working", "Working"
        COMPLETED = "completed", "Completed"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey("agents.Agent", on_delete=models.PROTECT, related_name="tool_tasks")
    tool_id = models.CharField(max_length=200)
    arguments = models.JSONField(null=True, blank=True, help_text="Until the call is made; then cleared")
    meta = models.JSONField(default=dict, blank=True, help_text="The call's jobId and sessionId")
    review_item = models.ForeignKey(
        "governance.ReviewItem", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.WORKING)
    status_message = models.CharField(max_length=1000, blank=True)
    result = models.JSONField(null=True, blank=True, help_text="The CallToolResult the agent gets, as MCP sends it")
    ttl_ms = models.PositiveIntegerField(help_text="How long the task is kept after it was created")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    started_at = models.DateTimeField(null=True, blank=True, help_text="When a poll claimed the approved call")

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["agent", "-created_at"], name="tool_task_agent")]

    def __str__(self) -> str:
        return f"{self.tool_id} task {self.pk} ({self.status})"
