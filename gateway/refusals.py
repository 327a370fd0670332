"""Refusals of MCP callers in the audit trail, as the REST API keeps its own: every refusal of a
caller holding one of our keys is one ``access.refused`` row (``record_refusal``) naming the
caller, the transport (``mcp``), the method and the tool, resource or prompt refused, whichever
door the request came through; a key of ours that may no longer be used (revoked, or its owner
deactivated) is audited when /mcp turns it away. A request with no key of ours is only logged:
anonymous traffic must not be able to fill the database."""

from __future__ import annotations

import logging

from governance.kernel.principals import Principal
from governance.kernel.services import record_refusal, refused_key

security_log = logging.getLogger("governance.security")

TRANSPORT = "mcp"
# Answers that carry a refusal's name without refusing the caller: waiting for a reviewer (the
# review item is the record), a dryRun job's call (recorded, not forwarded), an upstream or a
# dependency that failed.
NOT_REFUSED = frozenset({"PendingApproval", "DryRun", "UpstreamFailed", "Unavailable"})
# The status the REST API answers the same refusal with, so both doors' rows read alike.
STATUS = {
    "Forbidden": 403,
    "NotFound": 404,
    "NotGranted": 404,
    "Conflict": 409,
    "InvalidInput": 422,
    "RateLimited": 429,
}


def record(principal: Principal, *, method: str, name: str, refusal: str, detail: str) -> None:
    """Audit one refused MCP request (``method`` is the MCP method, ``name`` what it named)."""
    if refusal in NOT_REFUSED:
        return
    security_log.warning("[mcp] refused %s %s: %s for %s", method, name, refusal, principal.label)
    record_refusal(
        actor=principal.label,
        method=method,
        path=name,
        status=STATUS.get(refusal, 403),
        detail=detail,
        transport=TRANSPORT,
        refusal=refusal,
    )


def record_turned_away(token: str, *, method: str, path: str) -> None:
    """Audit a request /mcp answered 401 when its bearer token is one of our keys (a revoked one,
    say), naming whose key it is; log it otherwise."""
    api_key = refused_key(token) if token else None
    if api_key is None:
        security_log.warning("[mcp] refused %s %s: 401 (no valid key)", method, path)
        return
    actor = f"{api_key.owner_label} (key {api_key.prefix})"
    security_log.warning("[mcp] refused %s %s: 401 for %s", method, path, actor)
    record_refusal(
        actor=actor,
        method=method,
        path=path,
        status=401,
        detail="no valid API key",
        transport=TRANSPORT,
        refusal="Unauthorized",
        key=api_key.prefix,
        key_revoked=api_key.revoked_at is not None,
    )
