"""The OAuth request validator: django-oauth-toolkit's, with the scopes /mcp understands."""

from __future__ import annotations

from typing import Any

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

    def get_default_scopes(self, client_id: str, request: Any, *args: Any, **kwargs: Any) -> list[str]:
        return [MCP_SCOPE]
