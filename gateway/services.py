"""Writes to the gateway's configuration: upstream servers, by operators, audited."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import ProtectedError, RestrictedError

from gateway.models import ToolPin, UpstreamServer
from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Conflict, Forbidden, NotFound
from governance.kernel.principals import Principal
from governance.kernel.services import record
from governance.reviews import services as reviews
from governance.reviews.models import ReviewItem


def require_upstream_permission(actor: Principal, action: str) -> str:
    """Refuse an agent, whatever it asks, and an operator without ``gateway.<action>_upstreamserver``
    (the system, a shell's commands, acts for the host's operator). Edges call it before looking a
    server up, so a refused caller learns nothing of which names exist."""
    perm = f"gateway.{action}_upstreamserver"
    if actor.agent is not None or (actor.user is not None and not actor.has_perm(perm)):
        raise Forbidden(f"Managing upstream MCP servers needs the {perm} permission.")
    return perm


# Not durable: the admin's change form calls it inside Django's own transaction.
@transaction.atomic
def save_upstream(server: UpstreamServer, *, actor: Principal, changed: list[str]) -> UpstreamServer:
    """Add or change an upstream server: checked (``clean``: a URL the outbound guard allows, a
    command the deployment allows, a credential name that is not one of the platform's secrets)
    and recorded with who and which fields. Saved enabled and valid, a server the platform had
    disabled (an upgrade) no longer says why: the operator fixed it. A name another server has
    is a conflict, not a field error: the operator meant to change that one, or to pick another."""
    adding = server.pk is None
    require_upstream_permission(actor, "add" if adding else "change")
    if UpstreamServer.objects.filter(name=server.name).exclude(pk=server.pk).exists():
        raise Conflict(f"An upstream server named {server.name!r} exists already.", name=server.name)
    server.full_clean()
    if server.enabled and server.disabled_reason:
        server.disabled_reason = ""
        changed = [*changed, "disabled_reason"]
    try:
        with transaction.atomic():  # a savepoint: the admin's transaction goes on after a lost race
            server.save()
    except IntegrityError as exc:  # the same name, added since the check above
        raise Conflict(f"An upstream server named {server.name!r} exists already.", name=server.name) from exc
    record(
        actor=actor,
        action=AuditAction.GATEWAY_UPSTREAM_ADDED if adding else AuditAction.GATEWAY_UPSTREAM_CHANGED,
        target=server,
        fields=sorted(set(changed)),
    )
    return server


@transaction.atomic
def remove_upstream(name: str, *, actor: Principal) -> None:
    """Delete a server agents never called through the gateway. Its calls are the audit of what
    agents did there (``GatewayCall.server`` protects it): a server with calls is disabled
    instead, and the refusal says so. The row is locked first, so a call recorded meanwhile
    either comes before (and is seen) or waits and then finds no server."""
    require_upstream_permission(actor, "delete")
    server = UpstreamServer.objects.select_for_update().filter(name=name).first()
    if server is None:
        raise NotFound(f"No upstream server {name!r}.")
    disable = "Disable it instead (PATCH enabled=false, or `manage.py upstreams disable`)"
    if server.calls.exists():
        raise Conflict(
            f"Upstream server {name!r} has calls in the gateway's log, which are the audit trail of what agents "
            f"did there. {disable}: its tools leave every agent's list and its calls stay.",
            name=name,
        )
    # A changed definition still waiting in the inbox has nothing left to decide: closed, as at a deadline.
    waiting = ToolPin.objects.filter(server=server, review_item__status=ReviewItem.Status.PENDING)
    for item_id in waiting.values_list("review_item_id", flat=True):
        reviews.expire(item_id, comment=f"Upstream server {name!r} was removed.")
    record(
        actor=actor,
        action=AuditAction.GATEWAY_UPSTREAM_REMOVED,
        target=server,
        name=server.name,
        transport=server.transport,
        address=server.url or server.command,
    )
    try:
        server.delete()
    except (ProtectedError, RestrictedError) as exc:  # other records that must outlive it
        raise Conflict(f"Upstream server {name!r} is still referred to. {disable}.", name=name) from exc
