"""Upstream MCP servers the gateway stands in front of: registered by operators, never by agents."""

from __future__ import annotations

from django.core.validators import RegexValidator
from django.db import models

SERVER_NAME = RegexValidator(
    r"^[a-z0-9][a-z0-9-]*$", "Lower-case letters, digits and dashes, as in mcp__<name>__<tool>."
)


class UpstreamServer(models.Model):
    """An MCP server (Streamable HTTP) whose tools agents reach as ``mcp__<name>__<tool>``, when
    their active manifest grants them. Its credential is the name of an environment variable of
    the web processes holding a bearer token; the value is never stored or shown."""

    name = models.CharField(max_length=50, unique=True, validators=[SERVER_NAME])
    url = models.URLField(
        max_length=500, help_text="The server's Streamable HTTP endpoint, e.g. http://10.0.0.5:8080/mcp"
    )
    secret_name = models.CharField(
        max_length=100,
        blank=True,
        validators=[RegexValidator(r"^[A-Z_][A-Z0-9_]*$", "An environment variable name, e.g. SUPABASE_MCP_TOKEN.")],
        help_text="Environment variable holding the bearer token sent upstream; empty: none.",
    )
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
