"""The one place that decides whether a principal may touch an agent's objects.

Agents are told 403 for another agent's objects (their existence is not a secret inside a
fleet); operators need the model's view permission.
"""

from __future__ import annotations

from agents.models import Agent
from governance.exceptions import Forbidden, NotFound
from governance.principals import Principal


def get_agent_for(principal: Principal, agent_id: str) -> Agent:
    if principal.agent is not None:
        if principal.agent.agent_id != agent_id:
            raise Forbidden("This key belongs to another agent.", agent=principal.agent.agent_id)
        return principal.agent
    if not principal.has_perm("agents.view_agent"):
        raise Forbidden("Your account may not view agents.")
    agent = Agent.objects.visible_to(principal).filter(agent_id=agent_id).first()
    if agent is None:
        raise NotFound(f"No agent {agent_id!r}.")
    return agent
