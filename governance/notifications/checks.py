"""System checks for the notifications' configuration."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Warning, register

from governance.notifications import messages


@register("notifications", deploy=True)
def links_open_for_their_readers(app_configs: object, **kwargs: object) -> list[Warning]:
    """In production a notification's links must open on the readers' machines: NOTIFY_BASE_URL
    defaults to where the server was started, which on one host is its loopback address."""
    problem = None if settings.DEBUG else messages.link_base_problem(settings.NOTIFY_BASE_URL)
    if problem is None:
        return []
    return [
        Warning(
            f"NOTIFY_BASE_URL is {settings.NOTIFY_BASE_URL!r}: {problem}, so the links in notifications "
            "open nothing for those who read them.",
            hint="Set NOTIFY_BASE_URL to the address people open the control plane at (https://ops.example.com).",
            id="governance.W007",
        )
    ]
