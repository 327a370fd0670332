"""Demo agents, each with a fresh agent key printed at load time."""

from __future__ import annotations

from typing import TextIO

from agents.models import Agent
from governance.models import ApiKey
from governance.principals import SYSTEM
from governance.services import issue_api_key, revoke_api_key

DEMO_AGENTS = (
    ("agent.seo.vlevel", "V-Level Generator Agent"),
    ("agent.rag.indexer", "RAG Indexer Agent"),
)


def load(out: TextIO) -> None:
    for agent_id, name in DEMO_AGENTS:
        agent, _ = Agent.objects.update_or_create(agent_id=agent_id, defaults={"name": name})
        # One live demo key per agent: the one printed last.
        for old in ApiKey.objects.filter(agent=agent, name="demo", revoked_at__isnull=True):
            revoke_api_key(old, actor=SYSTEM)
        _, plain = issue_api_key(actor=SYSTEM, name="demo", agent=agent)
        out.write(f"Demo agent key for {agent_id}: {plain}\n")
