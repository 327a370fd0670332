"""Reads of the gateway's call log, scoped to who asks."""

from __future__ import annotations

from governance.kernel.querysets import PrincipalQuerySet


class GatewayCallQuerySet(PrincipalQuerySet):
    """An agent sees its own calls; an operator needs ``gateway.view_gatewaycall``."""

    view_perm = "gateway.view_gatewaycall"
