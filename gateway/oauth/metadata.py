"""Protected Resource Metadata (RFC 9728) for /mcp, and the challenge a 401 there carries."""

from __future__ import annotations

from django.http import HttpRequest
from django.urls import reverse
from oauth2_provider.views import OAuthProtectedResourceMetadataView

from gateway.oauth import subjects, tokens


class McpResourceMetadata(OAuthProtectedResourceMetadataView):
    """The resource is this plane's /mcp; the one scope a client asks for is ``mcp``."""

    def get_resource(self, request: HttpRequest) -> str:
        return tokens.resource_url(request)

    def get_scopes_supported(self) -> list[str]:
        return [subjects.MCP_SCOPE]

    def get_resource_name(self) -> str:
        return "Agent governance control plane (MCP)"


def challenge(request: HttpRequest, error: str = "") -> str:
    """``WWW-Authenticate`` for a 401 at /mcp: where the metadata is (RFC 9728 §5.1), the scope
    to ask for, and ``invalid_token`` when a token was sent and refused (RFC 6750 §3.1)."""
    metadata = request.build_absolute_uri(reverse("oauth2_provider:oauth-resource-metadata"))
    parts = [f'resource_metadata="{metadata}"', f'scope="{subjects.MCP_SCOPE}"']
    if error:
        parts.insert(0, f'error="{error}"')
    return "Bearer " + ", ".join(parts)
