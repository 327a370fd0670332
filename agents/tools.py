"""Tool calls: agents record each call of a manifest tool before making it, and the platform
enforces the tool's permission and its rate limit (calls per minute, sliding window).

The limit holds across web workers and hosts: calls of one (agent, tool) take turns on a
transaction-level advisory lock, then count the calls of the last 60 seconds.
"""

from __future__ import annotations

import math
from datetime import timedelta

from django.db import connection, transaction
from django.utils import timezone

from agents.models import Agent, ManifestTool, ToolCall
from governance.exceptions import Forbidden, RateLimited
from governance.principals import Principal

WINDOW = timedelta(minutes=1)


def _tool(agent: Agent, tool_id: str) -> ManifestTool:
    if agent.active_manifest_id is None:
        raise Forbidden(f"R1: agent {agent.agent_id!r} has no active manifest.")
    tool = ManifestTool.objects.filter(manifest_id=agent.active_manifest_id, tool_id=tool_id).first()
    if tool is None:
        raise Forbidden(f"Tool {tool_id!r} is not in the manifest of {agent.agent_id}.", tool_id=tool_id)
    return tool


@transaction.atomic
def record_call(agent: Agent, tool_id: str, *, actor: Principal, permission: str | None = None, job=None) -> dict:
    if not actor.owns(agent):
        raise Forbidden("Only the agent itself records its tool calls.")
    tool = _tool(agent, tool_id)
    if permission is not None and permission != tool.permission:
        raise Forbidden(
            f"Tool {tool_id!r} is granted {tool.permission!r}, not {permission!r}.",
            tool_id=tool_id,
            granted=tool.permission,
        )
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [agent.pk, tool_id])
    now = timezone.now()
    recent = list(
        ToolCall.objects.filter(agent=agent, tool_id=tool_id, called_at__gt=now - WINDOW)
        .order_by("-called_at")
        .values_list("called_at", flat=True)[: tool.rate_limit]
    )
    if len(recent) >= tool.rate_limit:
        # The call that frees a slot is the oldest of the last `rate_limit` calls.
        retry_after = max(1, math.ceil((recent[-1] + WINDOW - now).total_seconds()))
        raise RateLimited(
            f"Tool {tool_id!r} allows {tool.rate_limit} calls per minute.",
            retry_after=retry_after,
            tool_id=tool_id,
            rate_limit=tool.rate_limit,
        )
    call = ToolCall.objects.create(agent=agent, tool_id=tool_id, job=job, called_at=now)
    return {
        "id": call.pk,
        "tool_id": tool_id,
        "permission": tool.permission,
        "requires_approval": tool.requires_approval,
        "rate_limit": tool.rate_limit,
        "remaining": tool.rate_limit - len(recent) - 1,
        "called_at": now,
    }
