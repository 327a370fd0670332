"""An agent or a job as the principal may see it: an agent key reaches only its own agent and jobs.
The REST API and the MCP tools both come here: reads through `visible` (404 outside), writes
through `get_for` (403, audited)."""

from __future__ import annotations

from uuid import UUID

from agents.models import Agent, Job
from agents.querysets import JobQuerySet
from governance.kernel import tracing
from governance.kernel.access import get_for, require_owner_agent, visible
from governance.kernel.exceptions import Forbidden, NotFound
from governance.kernel.principals import Principal


def visible_agent(principal: Principal, agent_id: str) -> Agent:
    """An agent for a read: an agent key sees only its own (another is 404, as an unknown id)."""
    agent = visible(
        principal, Agent.objects.select_related("active_manifest"), agent_id, what="agent", field="agent_id"
    )
    assert isinstance(agent, Agent)
    return agent


def get_agent_for(principal: Principal, agent_id: str) -> Agent:
    """An agent to act for (record a tool call, create an automation): another agent is refused
    (403, and the refusal is audited)."""
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


def _jobs() -> JobQuerySet:
    return Job.objects.select_related("agent", "manifest")


def visible_job(principal: Principal, job_id: UUID) -> Job:
    """A job for a read: its owner agent's, any for an operator with agents.view_job; another
    agent's is 404, as an unknown id."""
    job = visible(principal, _jobs(), job_id, what="job")
    assert isinstance(job, Job)
    return traced(job)


def traced(job: Job) -> Job:
    """The request is about ``job``: its spans and log lines name the job, the agent's traceId and
    the agent, and so do the tasks it queues (governance/kernel/tracing.py)."""
    tracing.annotate_job(job_id=job.job_id, trace_id=job.trace_id, agent_id=job.agent.agent_id)
    return job


def owned_job(principal: Principal, job_id: UUID) -> Job:
    """A job only its owner agent drives (lease, state, result): another agent is refused (403,
    and the refusal is audited); operators read it (`visible_job`)."""
    job = get_for(principal, _jobs(), job_id, perm="agents.view_job", what="job")
    assert isinstance(job, Job)
    require_owner_agent(principal, "job")
    return traced(job)
