"""Writes of the agents app."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from agents.models import Agent
from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Conflict, Forbidden
from governance.kernel.principals import Principal
from governance.kernel.services import record


def register_agent(*, actor: Principal, agent_id: str, name: str = "") -> Agent:
    """Add an agent to the fleet. Its manifest, keys and jobs come later."""
    if not actor.has_perm("agents.add_agent"):
        raise Forbidden("Registering agents needs the agents.add_agent permission.")
    try:
        with transaction.atomic(durable=True):
            agent = Agent.objects.create(agent_id=agent_id, name=name)
            record(actor=actor, action=AuditAction.AGENT_REGISTERED, target=agent, agent_id=agent_id)
    except IntegrityError as exc:
        raise Conflict(f"Agent {agent_id!r} already exists.", agent_id=agent_id) from exc
    return agent
