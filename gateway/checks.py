"""System checks for the gateway's configuration."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, register

from gateway import commands


@register()
def stdio_commands_usable(app_configs: object, **kwargs: object) -> list[Error]:
    """A bad entry would leave its upstream unable to start, found only when an agent calls it."""
    return [
        Error(
            problem,
            hint="Fix GATEWAY_STDIO_COMMANDS (README, The gateway), or remove the entry.",
            id="gateway.E001",
        )
        for problem in commands.problems(settings.GATEWAY_STDIO_COMMANDS)
    ]
