"""Per-agent quotas on queued work: automations, queued sessions and pending approval requests. A buggy or hostile agent
that creates them in a loop gets 429 instead of filling the scheduler's queue (fuzzing once left
one agent with 1,747 queued sessions and 689 automations).

The limit is the agent's active manifest `quotas` entry when it sets one, else the setting.
"""

from __future__ import annotations

from django.conf import settings
from django.db.models import QuerySet

from agents.models import Agent
from agents.registry import manifest_document
from governance.kernel.exceptions import RateLimited
from governance.kernel.principals import Principal

SETTINGS = {
    "automations": "AGENT_MAX_AUTOMATIONS",
    "queued_sessions": "AGENT_MAX_QUEUED_SESSIONS",
    "pending_approvals": "AGENT_MAX_PENDING_APPROVALS",
}
RETRY_AFTER_SECONDS = 60


def limit(agent: Agent, kind: str) -> int:
    if agent.active_manifest_id is not None:
        override = (manifest_document(agent.active_manifest_id).get("quotas") or {}).get(kind)
        if override is not None:
            return override
    return getattr(settings, SETTINGS[kind])


def check(agent: Agent, kind: str, existing: QuerySet, *, actor: Principal) -> None:
    """Refuse one more ``kind`` for ``agent`` when ``existing`` already holds the limit. Call it
    with the agent row locked, so concurrent creators count one after the other. The system (the
    scheduler's own runs, the demo) is not limited."""
    if actor.user is None and actor.agent is None:
        return
    allowed = limit(agent, kind)
    if existing.count() >= allowed:
        raise RateLimited(
            f"Agent {agent.agent_id} has reached its quota of {allowed} {kind.replace('_', ' ')}.",
            retry_after=RETRY_AFTER_SECONDS,
            quota=kind,
            limit=allowed,
        )
