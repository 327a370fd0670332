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


def load_granting(agent_id: str, *, write_namespaces: tuple[str, ...] = (), watch_notes: bool = False) -> Agent:
    """The agent of a shipped manifest whose shared memory also grants writes: into the domains of
    ``write_namespaces``, and of fleet-wide watch notes (memory/provenance.py)."""
    from agents.registry import load_manifest

    grants = f"      write_namespaces: {list(write_namespaces)!r}\n" if write_namespaces else ""
    grants += "      watch_notes: true\n" if watch_notes else ""
    text = manifest_text(agent_id, version="9.9.0")
    text, found = re.subn(r"^(      namespaces: .*\n)", rf"\g<1>{grants}", text, count=1, flags=re.MULTILINE)
    if not found:  # no shared memory yet: turn it on, reading its own domain only
        shared = f"    shared:\n      enabled: true\n{grants}"
        text, found = re.subn(r"^(  memory:\n)", rf"\g<1>{shared}", text, count=1, flags=re.MULTILINE)
    assert found, f"{agent_id}'s manifest has no memory section"
    return load_manifest(text, actor=SYSTEM)[0].agent


def writes_into(agent: Agent, domain: str) -> None:
    """Make ``domain`` the agent's own (as a loaded manifest would): the domain it writes learnings
    and clarifications into without a write grant (memory/provenance.py)."""
    agent.domain = domain
    agent.save(update_fields=["domain"])
