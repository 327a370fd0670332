"""Reads of the gateway's call log, scoped to who asks."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from governance.kernel.querysets import PrincipalQuerySet

if TYPE_CHECKING:
    from gateway.models import UpstreamServer


class GatewayCallQuerySet(PrincipalQuerySet):
    """An agent sees its own calls; an operator needs ``gateway.view_gatewaycall``."""

    view_perm = "gateway.view_gatewaycall"

    def for_list(self) -> GatewayCallQuerySet:
        """What a call table shows, in one query whatever the number of rows (job and session
        are shown by their keys, which the row holds)."""
        return self.select_related("agent", "server").defer("arguments")

    def filtered(
        self,
        *,
        agent: Any = None,
        tool: str = "",
        server: UpstreamServer | None = None,
        outcome: str = "",
        refusal: str = "",
        since: datetime | None = None,
        before: datetime | None = None,
    ) -> GatewayCallQuerySet:
        """Narrow the log; empty values leave it as it is. ``tool`` is part of a tool id,
        ``refusal`` a refusal's name in any case, ``before`` excluded."""
        calls = self
        if agent is not None:
            calls = calls.filter(agent=agent)
        if tool:
            calls = calls.filter(tool_id__icontains=tool)
        if server is not None:
            calls = calls.filter(server=server)
        if outcome:
            calls = calls.filter(outcome=outcome)
        if refusal:
            calls = calls.filter(refusal__iexact=refusal)
        if since is not None:
            calls = calls.filter(called_at__gte=since)
        if before is not None:
            calls = calls.filter(called_at__lt=before)
        return calls
