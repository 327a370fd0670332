"""Reads of the sessions app, scoped to who asks (`visible_to`, see governance.kernel.querysets)."""

from __future__ import annotations

from governance.kernel.querysets import PrincipalQuerySet


class SessionQuerySet(PrincipalQuerySet):
    view_perm = "ai_sessions.view_aisession"


class AutomationQuerySet(PrincipalQuerySet):
    view_perm = "ai_sessions.view_automation"
