"""Writes to the gateway's configuration: upstream servers, by operators, audited."""

from __future__ import annotations

from django.db import transaction

from gateway.models import UpstreamServer
from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Forbidden
from governance.kernel.principals import Principal
from governance.kernel.services import record


# Not durable: the admin's change form calls it inside Django's own transaction.
@transaction.atomic
def save_upstream(server: UpstreamServer, *, actor: Principal, changed: list[str]) -> UpstreamServer:
    """Add or change an upstream server: checked (``clean``: a URL the outbound guard allows, a
    command the deployment allows, a credential name that is not one of the platform's secrets)
    and recorded with who and which fields. Saved enabled and valid, a server the platform had
    disabled (an upgrade) no longer says why: the operator fixed it."""
    adding = server.pk is None
    perm = "gateway.add_upstreamserver" if adding else "gateway.change_upstreamserver"
    if actor.agent is not None or (actor.user is not None and not actor.has_perm(perm)):
        raise Forbidden(f"Registering upstream MCP servers needs the {perm} permission.")
    server.full_clean()
    if server.enabled:
        server.disabled_reason = ""
    server.save()
    record(
        actor=actor,
        action=AuditAction.GATEWAY_UPSTREAM_ADDED if adding else AuditAction.GATEWAY_UPSTREAM_CHANGED,
        target=server,
        fields=sorted(changed),
    )
    return server
