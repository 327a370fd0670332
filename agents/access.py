"""An agent by its id, as the principal may see it: an agent key reaches only its own agent."""

from __future__ import annotations

from agents.models import Agent
from governance.kernel.exceptions import Forbidden, NotFound
from governance.kernel.principals import Principal


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
