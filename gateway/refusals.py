"""Refusals of MCP callers in the audit trail, as the REST API keeps its own: every refusal of a
caller holding one of our keys is one ``access.refused`` row (``record_refusal``) naming the
caller, the transport (``mcp``), the method and the tool, resource or prompt refused, whichever
door the request came through. A request without a key never gets this far (/mcp answers 401)."""

from __future__ import annotations

import logging

from governance.kernel.principals import Principal
from governance.kernel.services import record_refusal

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
