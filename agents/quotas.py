"""Per-agent quotas on queued work: automations, queued sessions, and the items an agent asks a
human with. A buggy or hostile agent that creates them in a loop gets 429 instead of filling the
scheduler's queue or the reviewers' inbox (fuzzing once left one agent with 1,747 queued sessions
and 689 automations; one agent opened 109 tool-call approvals in 4.2 s).

The limit is the agent's active manifest `quotas` entry when it sets one, else the setting.
"""

from __future__ import annotations

from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils import timezone

from agents.models import Agent
from agents.registry import manifest_document
from governance.kernel.exceptions import RateLimited
from governance.kernel.principals import Principal
from governance.reviews import kinds
from governance.reviews.models import ReviewItem

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
    _refuse_past(agent, kind, existing, what=kind.replace("_", " "))


def admit_ask(agent: Agent) -> None:
    """Admit one more pending item the agent asks a human with (the review kinds marked
    ``asked_by_agent``: approval-gated tool calls, approval requests, action approvals, questions),
    or refuse it past the agent's ``pending_approvals`` limit. Every way of asking counts against
    that one limit, whoever opens the item: the agent, or the platform working for it (a hosted
    session's action approval), since the reviewers' time is what the limit protects.

    Called by ``governance.reviews.services.open_item`` (``kinds.PENDING_ASKS``) before it writes
    anything. The agent row is locked (FOR NO KEY UPDATE) until the caller's transaction ends, so
    concurrent openers count one after the other, while rows that only reference the agent (its
    tool calls, its jobs) are still written meanwhile. An item past its deadline is not counted:
    nobody may decide it any more, and the sweep closes it within a minute."""
    locked = Agent.objects.select_for_update(no_key=True).get(pk=agent.pk)
    pending = ReviewItem.objects.filter(
        Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now()),
        agent=locked,
        status=ReviewItem.Status.PENDING,
        kind__in=[kind.code for kind in kinds.all() if kind.asked_by_agent],
    )
    _refuse_past(locked, "pending_approvals", pending, what="items waiting for a reviewer")


def _refuse_past(agent: Agent, kind: str, existing: QuerySet, *, what: str) -> None:
    allowed = limit(agent, kind)
    if existing[:allowed].count() >= allowed:  # counted up to the limit, never more
        raise RateLimited(
            f"Agent {agent.agent_id} has reached its quota of {allowed} {what}.",
            retry_after=RETRY_AFTER_SECONDS,
            quota=kind,
            limit=allowed,
        )
