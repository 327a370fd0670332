"""Agents router (/api/v1/agents)."""

from __future__ import annotations

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Router, Status
from ninja.pagination import LimitOffsetPagination, paginate

from agents.models import Agent
from agents.schemas import AgentIn, AgentOut
from agents.services import register_agent
from governance.access import get_agent_for

router = Router(tags=["agents"])


@router.get("", response=list[AgentOut])
@paginate(LimitOffsetPagination)
def list_agents(request: HttpRequest) -> QuerySet[Agent]:
    """The agents the caller may see: an agent key sees only its own agent."""
    return Agent.objects.visible_to(request.auth)


@router.post("", response={201: AgentOut})
def create_agent(request: HttpRequest, data: AgentIn) -> Status:
    """Register an agent (operators with `agents.add_agent`); 409 when the id is taken."""
    return Status(201, register_agent(actor=request.auth, agent_id=data.agent_id, name=data.name))


@router.get("/{agent_id}", response=AgentOut)
def get_agent(request: HttpRequest, agent_id: str) -> Agent:
    """One agent: an agent key may read only its own agent; operators need `agents.view_agent`."""
    return get_agent_for(request.auth, agent_id)
