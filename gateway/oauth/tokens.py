"""OAuth access tokens at /mcp: which principal a token acts as, and revoking grants.

A token is honoured only while everything that made it is still true: bound to this resource
(RFC 8707: a token minted for another audience is refused), not expired, its user active, and,
for a token acting as an agent, its user still allowed to act for agents (the power to mint an
agent's key) and the agent still there. Nothing is cached across requests: a revocation, a
deactivated user or a withdrawn permission stops the next call.
"""

from __future__ import annotations

import hashlib
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.http import HttpRequest
from django.urls import reverse
from oauth2_provider.models import AccessToken, RefreshToken, revoke_access_token

from agents.models import Agent
from gateway.oauth.subjects import subject_of
from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Forbidden
from governance.kernel.principals import Principal
from governance.kernel.services import record

# Acting as an agent is what an agent's key allows: the consent page offers agents to those who
# may mint one, and a token stops working when its user no longer may.
ACT_AS_AGENT = "governance.add_apikey"
REVOKE = "oauth2_provider.delete_accesstoken"


def resource_url(request: HttpRequest) -> str:
    """This plane's /mcp as clients name it in RFC 8707 ``resource`` (MCP_RESOURCE_URL behind a
    proxy that rewrites the host or the scheme)."""
    return settings.MCP_RESOURCE_URL or request.build_absolute_uri(reverse("mcp"))


def same_resource(a: str, b: str) -> bool:
    """RFC 3986 equivalence enough for resource indicators: scheme and host case-insensitive, no
    trailing slash, no default port."""

    def canonical(url: str) -> tuple[str, str, str]:
        parts = urlsplit(url.strip())
        default = {"http": 80, "https": 443}.get(parts.scheme.lower())
        try:
            port = parts.port
        except ValueError:
            return ("", url, "")
        netloc = (parts.hostname or "").lower() + ("" if port in (None, default) else f":{port}")
        return parts.scheme.lower(), netloc, parts.path.rstrip("/")

    return canonical(a) == canonical(b)


def principal_for(token: str, resource: str) -> Principal | None:
    """The principal an access token acts as at ``resource``; None for anything else."""
    checksum = hashlib.sha256(token.encode()).hexdigest()
    access = AccessToken.objects.select_related("user").filter(token_checksum=checksum).first()
    if access is None or access.is_expired() or access.user is None or not access.user.is_active:
        return None
    if not any(same_resource(bound, resource) for bound in access.resource or []):
        return None
    subject = subject_of(access.scope.split())
    if subject is None:
        return None
    if not subject.agent_id:
        return Principal(user=access.user)
    if not access.user.has_perm(ACT_AS_AGENT):
        return None
    agent = Agent.objects.filter(agent_id=subject.agent_id).first()
    return Principal(agent=agent) if agent is not None else None


@transaction.atomic
def revoke(token: AccessToken | RefreshToken, *, actor: Principal) -> None:
    """Revoke a grant's token, as django-oauth-toolkit's revocation endpoint does (an access token
    takes its refresh token with it, a refresh token its access token; the refresh token stays
    as a tombstone so its replay is detected), audited with who revoked it, which client and whom
    it acted as. The token itself is never written anywhere."""
    if not actor.has_perm(REVOKE):
        raise Forbidden(f"Revoking OAuth grants needs the {REVOKE} permission.")
    access = token if isinstance(token, AccessToken) else token.access_token
    record(
        actor=actor,
        action=AuditAction.OAUTH_REVOKED,
        target=token,
        client=token.application.name or token.application.client_id if token.application else "",
        user=token.user.get_username() if token.user else "",
        scope=access.scope if access is not None else "",
    )
    if isinstance(token, AccessToken):
        revoke_access_token(token)
    else:
        token.revoke()
