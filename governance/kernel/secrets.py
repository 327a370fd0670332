"""Credentials the server sends elsewhere (provider keys, upstream MCP tokens) are named, never
stored: a row holds the NAME of an environment variable, read when the credential is sent.

Whoever writes that name chooses what the server sends to the row's URL, so the names are an
allow-list, not a deny-list: a deny-list of the platform's own secrets always misses one (mail,
embedding, tracing headers were all sendable). A name must carry the prefix of its use
(``PROVIDER_KEY_`` for model providers, ``UPSTREAM_TOKEN_`` for MCP upstreams), which the
deployer gives only to variables meant to leave the host. Its ``<name>_FILE`` twin is read only
inside ``CREDENTIALS_DIR``, so a name cannot point the server at one of its own files either.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

from django.conf import settings

logger = logging.getLogger(__name__)

PROVIDER_KEY_PREFIX = "PROVIDER_KEY_"
UPSTREAM_TOKEN_PREFIX = "UPSTREAM_TOKEN_"
SECRET_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,99}$")


def name_error(name: str, *, prefix: str) -> str | None:
    """Why ``name`` cannot name a credential of this use, or None. It names a variable, never
    holds a key."""
    if not name:
        return None
    if not SECRET_NAME.match(name):
        return f"the NAME of an environment variable ({prefix}…: A-Z, 0-9, _), not the key itself"
    if name.endswith("_FILE"):
        return f"name the variable without _FILE: {name[:-5]}_FILE is read automatically"
    if not name.startswith(prefix) or name == prefix:
        return f"only variables named {prefix}<NAME> may be sent elsewhere (this keeps the platform's own secrets home)"
    return None


def value(name: str, *, prefix: str) -> str:
    """The credential, read now from ``<name>`` or ``<name>_FILE``; "" when unset, unnamed or not
    allowed (a row older than the allow-list, or edited by hand), which callers treat as missing."""
    if not name:
        return ""
    if name_error(name, prefix=prefix):
        logger.warning("[secrets] refused to send %s: not a %s* variable", name, prefix)
        return ""
    file_path = os.environ.get(f"{name}_FILE")
    if not file_path:
        return os.environ.get(name, "")
    path = Path(file_path).resolve()
    if not path.is_relative_to(Path(settings.CREDENTIALS_DIR).resolve()):
        logger.warning("[secrets] %s_FILE is outside CREDENTIALS_DIR: not read", name)
        return ""
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def status(name: str, *, prefix: str) -> str:
    """What operators may know of a credential: "set", "missing", "not allowed", or "" when none
    is named."""
    if not name:
        return ""
    if name_error(name, prefix=prefix):
        return "not allowed"
    return "set" if value(name, prefix=prefix) else "missing"
