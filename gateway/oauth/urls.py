"""The OAuth endpoints, in django-oauth-toolkit's URL namespace (its metadata view reverses them).

The authorization server's metadata (RFC 8414) is at the root, as its issuer is the plane's
origin; the protected resource's (RFC 9728) at the path form for /mcp only, so that the
key-only URL (/mcp/key) advertises no OAuth and clients that would start OAuth on discovery use
their configured header there.
"""

from django.urls import path
from oauth2_provider import views

from gateway.oauth.consent import ConsentView
from gateway.oauth.metadata import McpResourceMetadata

app_name = "oauth2_provider"

urlpatterns = [
    path(
        ".well-known/oauth-authorization-server",
        views.OAuthServerMetadataView.as_view(),
        name="oauth-server-metadata",
    ),
    path(".well-known/oauth-protected-resource/mcp", McpResourceMetadata.as_view(), name="oauth-resource-metadata"),
    path("oauth/authorize/", ConsentView.as_view(), name="authorize"),
    path("oauth/token/", views.TokenView.as_view(), name="token"),
    path("oauth/revoke/", views.RevokeTokenView.as_view(), name="revoke-token"),
    path("oauth/register/", views.DynamicClientRegistrationView.as_view(), name="dcr-register"),
    path(
        "oauth/register/<str:client_id>/",
        views.DynamicClientRegistrationManagementView.as_view(),
        name="dcr-register-management",
    ),
]
