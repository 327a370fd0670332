"""API schemas of the gateway's upstream servers (field names as the model and the admin name them).

A credential appears only by its variable's name and whether it is set: never its value."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema
from pydantic import ConfigDict, field_validator

Transport = Literal["http", "stdio"]
ResultSecrets = Literal["redact", "block", "log"]

# What each field means, the same words in and out.
URL = "Streamable HTTP: its endpoint, e.g. https://mcp.example.com/mcp (https only, unless internal)"
INTERNAL = "Allow plain http and private or loopback addresses (a server on the private network); never cloud metadata"
COMMAND = "stdio: one of the commands the deployment allows (GATEWAY_STDIO_COMMANDS), by name, never a command line"
SECRET_NAME = "UPSTREAM_TOKEN_<NAME>: the environment variable with the credential (or its _FILE twin); empty: none"
RESULT_SECRETS = (
    "Secrets found in a tool's result: redact replaces each with a marker, block answers the agent a tool error "
    "without the result, log passes it unchanged; the call log counts them, never their values"
)
DISABLED_REASON = "Why the server is disabled (by the platform or an operator); empty while it is enabled"


class UpstreamIn(Schema):
    """A new upstream server. Checked as in the admin: the outbound guard on the URL, a command the
    deployment allows, a credential variable that is not one of the platform's own."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., max_length=50, description="Lower-case letters, digits and dashes: mcp__<name>__<tool>")
    transport: Transport = "http"
    url: str = Field("", max_length=500, description=URL)
    internal: bool = Field(False, description=INTERNAL)
    command: str = Field("", max_length=1000, description=COMMAND)
    secret_name: str = Field("", max_length=100, description=SECRET_NAME)
    result_secrets: ResultSecrets = Field("redact", description=RESULT_SECRETS)
    enabled: bool = True
    disabled_reason: str = Field("", max_length=1000, description=DISABLED_REASON)


class UpstreamPatch(Schema):
    """Only the fields sent change; none may be null. The name stays: manifests grant tools by it.
    ``enabled: false`` disables the server (its calls stay in the log), with an optional reason."""

    model_config = ConfigDict(extra="forbid")

    transport: Transport | None = None
    url: str | None = Field(None, max_length=500, description=URL)
    internal: bool | None = Field(None, description=INTERNAL)
    command: str | None = Field(None, max_length=1000, description=COMMAND)
    secret_name: str | None = Field(None, max_length=100, description=SECRET_NAME)
    result_secrets: ResultSecrets | None = Field(None, description=RESULT_SECRETS)
    enabled: bool | None = None
    disabled_reason: str | None = Field(None, max_length=1000, description=DISABLED_REASON)

    @field_validator("*")
    @classmethod
    def _not_null(cls, value: Any) -> Any:
        """Runs only on sent values: a field sent as null is refused, left out is kept."""
        if value is None:
            raise ValueError("may be left out, not null")
        return value

    def changes(self) -> dict[str, Any]:
        """The sent fields, by the model's names."""
        return {field: getattr(self, field) for field in self.model_fields_set}


class UpstreamOut(Schema):
    name: str
    transport: Transport
    url: str
    internal: bool
    command: str
    secret_name: str
    secret_status: str = Field(
        ..., description='"set", "missing", "not allowed" (a name outside UPSTREAM_TOKEN_*), or "" when none is named'
    )
    result_secrets: ResultSecrets = Field(..., description=RESULT_SECRETS)
    enabled: bool
    disabled_reason: str = Field(..., description=DISABLED_REASON)
    created_at: datetime
    address: str = Field(..., description="Where the server is, as an operator reads it (a stdio command's argv)")
