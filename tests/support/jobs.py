"""Jobs driven through the real services (submit, lease, report, result), so tests about what a
job leaves behind start from a job the platform itself moved along."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agents.models import Agent, Job


def submit_job(
    agent: Agent, payload: dict[str, Any], *, intent: str = "seo_audit", key: str | None = None, **envelope: Any
) -> Job:
    """A queued job, submitted by the agent through the service."""
    from agents.envelope import JobEnvelopeIn
    from agents.jobs import submission
    from governance.kernel.principals import Principal

    data = {
        "intent": intent,
        "scope": {"entityType": "page"},
        "payload": payload,
        "context": {"source": "manual"},
        "idempotencyKey": key,
        **envelope,
    }
    return submission.submit_job(JobEnvelopeIn.model_validate(data), actor=Principal(agent=agent))[0]


def finish_job(job: Job, output: dict[str, Any]) -> Job:
    """Lease the job, report one node, and submit ``output`` (an AgentOutput as a dict)."""
    from agents.envelope import AgentOutput, GraphStateUpdate
    from agents.jobs import leases, results
    from governance.kernel.principals import Principal

    worker = Principal(agent=job.agent)
    job = leases.claim_lease(job, actor=worker, owner="test-worker")
    job = results.update_state(job, GraphStateUpdate(currentNode="work"), actor=worker)
    results.submit_result(job, AgentOutput.model_validate(output), actor=worker)
    job.refresh_from_db()
    return job
