"""System checks for the sessions app's configuration."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, register

from sessions.machine import parse_phase_deadlines


@register()
def phase_deadlines_parse(app_configs: object, **kwargs: object) -> list[Error]:
    """Every session that enters an active phase arms its deadline from SESSION_PHASE_DEADLINES
    (sessions/limits.py): a value that does not parse would fail each of them, so `serve`,
    `migrate` and `check` stop on it first."""
    try:
        parse_phase_deadlines(settings.SESSION_PHASE_DEADLINES)
    except ValueError as exc:
        return [
            Error(
                f"SESSION_PHASE_DEADLINES: {exc}",
                hint="Write PHASE=seconds pairs separated by commas, e.g. CALLING_AI=300,EXECUTING_ACTIONS=900.",
                id="sessions.E001",
            )
        ]
    return []
