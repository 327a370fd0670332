"""Credentials the server sends elsewhere (provider keys, upstream MCP tokens) are named, never
stored: a row holds the NAME of an environment variable, read when the credential is sent."""

from __future__ import annotations

import re

from governance.kernel import env

SECRET_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,99}$")
# The platform's own secrets: a row naming one would send it to whoever the row points at.
PLATFORM_SECRETS = frozenset(
    {
        "DATABASE_URL",
        "SECRET_KEY",
        "DJANGO_SECRET_KEY",
        "CELERY_BROKER_URL",
        "CELERY_RESULT_BACKEND",
        "METRICS_TOKEN",
        "PGPASSWORD",
    }
)


def name_error(name: str) -> str | None:
    """Why ``name`` cannot name a credential, or None. It names a variable, never holds a key."""
    if not name:
        return None
    if not SECRET_NAME.match(name):
        return "the NAME of an environment variable (A-Z, 0-9, _), not the key itself"
    if name.endswith("_FILE"):
        return f"name the variable without _FILE: {name[:-5]}_FILE is read automatically"
    if name in PLATFORM_SECRETS:
        return f"{name} is one of the platform's own secrets, never a credential to send elsewhere"
    return None


def value(name: str) -> str:
    """The credential, read now from ``<name>_FILE`` or ``<name>``; "" when unset or unnamed."""
    if not name:
        return ""
    try:
        return env.string(name)
    except OSError:
        return ""


def status(name: str) -> str:
    """What operators may know of a credential: "set", "missing", or "" when none is named."""
    if not name:
        return ""
    return "set" if value(name) else "missing"
