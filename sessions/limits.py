"""Session limits per agent (seed 003's AILimitsConfig): the agent's active manifest may set its
own in a ``sessions:`` block (``chat_max_autonomous_roundtrips``,
``automation_max_autonomous_roundtrips``, ``inactivity_timeout_minutes``); whatever it leaves out
keeps the SESSION_* setting. An operator can so give a long-running agent more room, or hold a
risky one on a shorter leash, without changing the fleet's defaults.

The manifest is read at each event, so a new manifest version applies from the next event on.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from django.conf import settings

from agents.models import Agent
from agents.registry import manifest_document
from sessions import machine


def manifest_sessions(manifest_id: int | None) -> dict[str, Any]:
    """The ``sessions:`` block of a stored manifest ({} without a manifest, or for one stored
    before the block existed)."""
    if manifest_id is None:
        return {}
    return manifest_document(manifest_id).get("sessions") or {}


def _chat_roundtrips(block: dict[str, Any]) -> int | None:
    value = block.get("chat_max_autonomous_roundtrips")
    if value is None:
        return settings.SESSION_CHAT_MAX_ROUNDTRIPS
    return value or None  # 0: unlimited, as the setting


def inactivity_timeout(manifest_id: int | None) -> timedelta:
    minutes = manifest_sessions(manifest_id).get("inactivity_timeout_minutes")
    return timedelta(minutes=minutes or settings.SESSION_INACTIVITY_TIMEOUT_MINUTES)


def for_agent(agent: Agent) -> machine.Limits:
    """The limits the agent's sessions run under now."""
    block = manifest_sessions(agent.active_manifest_id)
    automation = block.get("automation_max_autonomous_roundtrips")
    return machine.Limits(
        chat_max_autonomous_roundtrips=_chat_roundtrips(block),
        automation_max_autonomous_roundtrips=automation or settings.SESSION_AUTOMATION_MAX_ROUNDTRIPS,
        inactivity_timeout=inactivity_timeout(agent.active_manifest_id),
        phase_deadlines=machine.parse_phase_deadlines(settings.SESSION_PHASE_DEADLINES),
    )


def shortest_inactivity_timeout(manifest_ids: Iterable[int | None]) -> timedelta:
    """The shortest idle limit among these manifests and the setting: the watchdog looks at every
    session idle that long, and the machine then judges each against its own agent's limit."""
    return min([inactivity_timeout(None), *(inactivity_timeout(manifest_id) for manifest_id in set(manifest_ids))])
