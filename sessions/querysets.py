"""Reads of the sessions app, scoped to who asks (`visible_to`, see governance.querysets)."""

from __future__ import annotations

from governance.querysets import PrincipalQuerySet


class SessionQuerySet(PrincipalQuerySet):
    view_perm = "ai_sessions.view_aisession"


class AutomationQuerySet(PrincipalQuerySet):
    view_perm = "ai_sessions.view_automation"
