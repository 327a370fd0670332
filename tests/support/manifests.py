"""The shipped seed manifests (agents/manifests/), read and loaded the way the API does, so tests
start from the fleet the product ships rather than from hand-made rows."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from governance.kernel.principals import SYSTEM

if TYPE_CHECKING:
    from agents.models import Agent

MANIFESTS = Path(__file__).resolve().parents[2] / "agents" / "manifests"


def manifest_text(agent_id: str, **changes: str) -> str:
    """The YAML of a shipped manifest (agent.seo.vlevel is seed 001's example, unchanged), with some
    top-level scalar lines replaced if asked (``version="1.1.0"``)."""
    text = (MANIFESTS / f"{agent_id}.yaml").read_text(encoding="utf-8")
    for key, value in changes.items():
        text = re.sub(rf"^(\s+){key}: .*$", rf'\g<1>{key}: "{value}"', text, count=1, flags=re.MULTILINE)
    return text


def load(agent_id: str) -> Agent:
    """The agent of a shipped manifest, with that manifest loaded and active."""
    from agents.registry import load_manifest

    return load_manifest(manifest_text(agent_id), actor=SYSTEM)[0].agent


def load_seed_manifests() -> dict[str, Agent]:
    """The whole seed fleet (vlevel, indexer, architect...), by agent id."""
    from agents.models import Agent
    from agents.registry import load_manifest

    for path in sorted(MANIFESTS.glob("*.yaml")):
        load_manifest(path.read_text(encoding="utf-8"), actor=SYSTEM)
    return {agent.agent_id: agent for agent in Agent.objects.select_related("active_manifest")}
