"""The OAuth request validator: django-oauth-toolkit's, with the scopes /mcp understands."""

from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import urlsplit

from oauth2_provider.oauth2_validators import OAuth2Validator

from gateway.oauth.subjects import MCP_SCOPE, is_subject_scope


class McpValidator(OAuth2Validator):
    """Admits ``mcp`` and the subject scopes the consent page adds (``agent:<id>``,
    ``operator``). Whether a client may *ask* for a subject is the consent page's rule (it may
    not); whether the operator may *grant* it is checked there too, and again at every request
    to /mcp (tokens.py)."""

    def validate_scopes(
        self, client_id: str, scopes: list[str], client: Any, request: Any, *args: Any, **kwargs: Any
    ) -> bool:
        return all(scope == MCP_SCOPE or is_subject_scope(scope) for scope in scopes)

    def validate_redirect_uri(self, client_id: str, redirect_uri: str, request: Any, *args: Any, **kwargs: Any) -> bool:
        """OAuth 2.1 §2.3.1: plain http only to the client's own machine (a native client's
        loopback listener, RFC 8252 §7.3); everywhere else https or an app's own scheme."""
        return plain_http_is_loopback(redirect_uri) and super().validate_redirect_uri(
            client_id, redirect_uri, request, *args, **kwargs
        )

    def get_default_scopes(self, client_id: str, request: Any, *args: Any, **kwargs: Any) -> list[str]:
        return [MCP_SCOPE]


def plain_http_is_loopback(uri: str) -> bool:
    """False for an http URI whose host is not loopback; True for anything else."""
    parts = urlsplit(uri)
    if parts.scheme.lower() != "http":
        return True
    host = (parts.hostname or "").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
