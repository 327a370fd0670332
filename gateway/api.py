"""Upstream servers router (/api/v1/gateway/upstreams): operators register, change, disable and
remove the MCP servers the gateway stands in front of, as in the admin and ``manage.py upstreams``:
the same permissions (the model's view, add, change and delete), the same checks and audit rows,
through ``gateway.services``. Agent keys are refused every operation, reads included: the list
names private addresses and credential variables.

No ``from __future__ import annotations`` here: ninja resolves a paginated view's annotations in
the namespace of its pagination wrapper, where these names do not exist."""

from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Router, Status
from ninja.pagination import paginate

from gateway import services
from gateway.models import UpstreamServer
from gateway.schemas import Transport, UpstreamIn, UpstreamOut, UpstreamPatch
from governance.kernel.auth import caller
from governance.kernel.exceptions import InvalidInput, NotFound
from governance.kernel.principals import Principal
from governance.kernel.validation import BoundedLimitOffsetPagination

router = Router(tags=["gateway"])


def _named(name: str) -> UpstreamServer:
    server = UpstreamServer.objects.filter(name=name).first()
    if server is None:
        raise NotFound(f"No upstream server {name!r}.")
    return server


def _reason_refused(enabled: bool, reason: str) -> None:
    """A reason is only kept for a disabled server (saving an enabled one clears it): sent for one
    that stays enabled, it would vanish without a word."""
    if reason and enabled:
        msg = "only a disabled server has a reason: send enabled=false with it"
        raise InvalidInput(msg, errors=[{"loc": ["body", "disabled_reason"], "msg": msg, "type": "value_error"}])


def _saved(server: UpstreamServer, *, actor: Principal, changed: list[str]) -> UpstreamServer:
    """``save_upstream``, its model checks reported as a 422 at each field."""
    try:
        return services.save_upstream(server, actor=actor, changed=changed)
    except ValidationError as exc:
        errors = [
            {"loc": ["body"] if field == "__all__" else ["body", field], "msg": message, "type": "value_error"}
            for field, messages in exc.message_dict.items()
            for message in messages
        ]
        raise InvalidInput("The upstream server is not valid.", errors=errors) from exc


@router.get("", operation_id="list_upstreams", response=list[UpstreamOut])
@paginate(BoundedLimitOffsetPagination)
def list_upstreams(
    request: HttpRequest, enabled: bool | None = None, transport: Transport | None = None
) -> QuerySet[UpstreamServer]:
    """Every upstream server by name, filtered by `enabled` and `transport`: operators with
    `gateway.view_upstreamserver`. A credential shows as its variable's name and `secret_status`."""
    services.require_upstream_permission(caller(request), "view")
    servers = UpstreamServer.objects.order_by("name")
    if enabled is not None:
        servers = servers.filter(enabled=enabled)
    if transport:
        servers = servers.filter(transport=transport)
    return servers


@router.post("", operation_id="add_upstream", response={201: UpstreamOut})
def add_upstream(request: HttpRequest, data: UpstreamIn) -> Status:
    """Register a server (`gateway.add_upstreamserver`): 422 at the field for a URL the outbound
    guard refuses (a private address not marked internal, cloud metadata ever), a stdio command
    the deployment does not allow, or a credential variable outside `UPSTREAM_TOKEN_*`; 409 for a
    name another server has."""
    principal = caller(request)
    services.require_upstream_permission(principal, "add")
    fields = data.model_dump()
    _reason_refused(fields["enabled"], fields["disabled_reason"])
    blank = UpstreamServer()
    changed = [field for field, value in fields.items() if getattr(blank, field) != value]
    return Status(201, _saved(UpstreamServer(**fields), actor=principal, changed=changed))


@router.get("/{name}", operation_id="get_upstream", response=UpstreamOut)
def get_upstream(request: HttpRequest, name: str) -> UpstreamServer:
    """One server (`gateway.view_upstreamserver`); 404 for a name no server has."""
    services.require_upstream_permission(caller(request), "view")
    return _named(name)


@router.patch("/{name}", operation_id="change_upstream", response=UpstreamOut)
def change_upstream(request: HttpRequest, name: str, data: UpstreamPatch) -> UpstreamServer:
    """Change the fields sent (`gateway.change_upstreamserver`), checked again as a whole: a new
    URL, or `internal` switched off, must pass the guard. `enabled: false` disables the server,
    with an optional `disabled_reason`; `enabled: true` enables it and clears the reason. The
    audit row lists the fields that changed; sending the values it has changes nothing."""
    principal = caller(request)
    services.require_upstream_permission(principal, "change")
    server = _named(name)
    changes: dict[str, Any] = data.changes()
    _reason_refused(changes.get("enabled", server.enabled), changes.get("disabled_reason", ""))
    changed = [field for field, value in changes.items() if getattr(server, field) != value]
    if not changed:
        return server
    for field in changed:
        setattr(server, field, changes[field])
    return _saved(server, actor=principal, changed=changed)


@router.delete("/{name}", operation_id="remove_upstream", response={204: None})
def remove_upstream(request: HttpRequest, name: str) -> Status:
    """Remove a server agents never called (`gateway.delete_upstreamserver`): 204, audited. A
    server with calls is 409: its calls are the audit trail of what agents did there; disable it
    instead (PATCH `enabled: false`)."""
    services.remove_upstream(name, actor=caller(request))
    return Status(204, None)
