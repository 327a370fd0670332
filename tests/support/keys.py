"""API keys for tests, issued through the service as an operator would, so they are real keys."""

from __future__ import annotations

from typing import TYPE_CHECKING

from governance.kernel.principals import SYSTEM
from governance.kernel.services import issue_api_key

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from agents.models import Agent


def issue_key(*, agent: Agent | None = None, user: AbstractBaseUser | None = None) -> str:
    """The plain bearer key of a new key for ``agent`` or ``user`` (shown once, like the service does)."""
    return issue_api_key(actor=SYSTEM, name="test", agent=agent, user=user)[1]
