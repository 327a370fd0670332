"""Who is acting: an agent (agent key) or a person (operator key or browser session)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from agents.models import Agent
    from governance.kernel.models import ApiKey


@dataclass(frozen=True)
class Principal:
    agent: Agent | None = None
    user: AbstractBaseUser | None = None
    api_key: ApiKey | None = None

    @property
    def is_agent(self) -> bool:
        return self.agent is not None

    @property
    def is_operator(self) -> bool:
        return self.user is not None

    @property
    def label(self) -> str:
        """Who did it, as written into audit rows."""
        if self.agent is not None:
            return f"agent:{self.agent.agent_id}"
        if self.user is not None:
            return f"user:{self.user.get_username()}"
        return "system"

    @property
    def minted_by(self) -> str:
        """Who minted the operator key acting here for its user, when someone else did (a
        superuser, the create_api_key command): decisions and audit rows name them with the user."""
        return self.api_key.minted_by if self.api_key is not None else ""

    def has_perm(self, perm: str) -> bool:
        return self.user is not None and self.user.is_active and self.user.has_perm(perm)

    def owns(self, agent: Agent) -> bool:
        return self.agent is not None and self.agent.pk == agent.pk


SYSTEM = Principal()
