"""PromptData for a session (seed 003 section 10): level 1 documentation, level 2 always-send
data, and the messages the model may see. Regenerated at every call, never stored."""

from __future__ import annotations

from typing import Any

from sessions import limits as session_limits
from sessions.machine import SessionType, SystemMessageType
from sessions.models import AISession, PromptChunk, SessionMessage
from sessions.providers import anthropic, openai
from sessions.providers.base import PromptData, PromptMessage

HIDDEN_SYSTEM_TYPES = (SystemMessageType.NETWORK_ERROR.value, SystemMessageType.SESSION_TIMEOUT.value)


def _limits_chunk(session: AISession) -> str:
    """The session type's limits as they apply to this agent (its manifest, else the settings)."""
    limit = session_limits.for_agent(session.agent).max_roundtrips(SessionType(session.type))
    if session.type == SessionType.AUTOMATION:
        return (
            "## Limits\n"
            f"This is an AUTOMATION session: nobody is watching. You have at most {limit} round trips in total.\n"
            "After your actions succeed you continue automatically. When the work is done, answer with "
            '`"completed": true`. Communication modules are not available; validation requests are ignored, '
            "but tools that require approval still wait for a reviewer."
        )
    bound = f"at most {limit} round trips" if limit else "no limit on round trips"
    return (
        "## Limits\n"
        f"This is a CHAT session with a person: {bound}. After your actions the person takes over again, "
        'unless you set `"keepControl": true`.'
    )


def level1(session: AISession) -> str:
    chunks = [
        f"## {chunk.title}\n{chunk.body}"
        for chunk in PromptChunk.objects.filter(enabled=True)
        if not chunk.session_types or session.type in chunk.session_types
    ]
    return "\n\n".join([*chunks, _limits_chunk(session)])


def level2(session: AISession) -> str:
    """The agent's always-present context: who it is and the tools its manifest grants."""
    agent = session.agent
    manifest = agent.active_manifest
    if manifest is None:
        return f"Agent {agent.agent_id} has no active manifest: it may not call tools."
    tools = [
        f"- {tool['tool_id']} ({tool['permissions']}, {tool['rate_limit']}/min"
        + (", needs approval)" if tool.get("requires_approval") else ")")
        for tool in manifest.document["tools"]
    ]
    return "\n".join(
        [
            f"Agent {agent.agent_id} ({manifest.document['name']}), {agent.role} in {agent.domain}, "
            f"manifest {manifest.version}.",
            "Tools:",
            *tools,
        ]
    )


def visible_messages(session: AISession):
    """Messages the model sees: not the audit-only system messages, not UI-only ones."""
    return (
        session.messages.filter(removed_at__isnull=True, exclude_from_prompt=False)
        .exclude(system_type__in=HIDDEN_SYSTEM_TYPES)
        .order_by("seq")
    )


def render(message: SessionMessage) -> PromptMessage:
    if message.sender == "USER":
        text = (message.rich_content or {}).get("linearText") or message.text_content or ""
    elif message.sender == "AI":
        text = message.ai_message_json or message.text_content or ""
    else:
        system = message.system_message or {}
        text = f"{system.get('type')}: {system.get('summary', '')}"
        if system.get("formattedData"):
            text += "\n" + system["formattedData"]
    return PromptMessage(sender=message.sender, text=text)


def provider_ready(data: PromptData, provider: str) -> dict[str, Any]:
    """The request parts a provider wants, built by the same code the hosted sessions use, so an
    agent author never re-implements fusion, the closing user turn or the cache breakpoints."""
    if provider == "anthropic":
        return {"system": anthropic.system_blocks(data), "messages": anthropic.claude_messages(data)}
    return {"system": openai.system_text(data), "messages": openai.turn_messages(data)}


def build(session: AISession) -> tuple[PromptData, list[SessionMessage]]:
    messages = list(visible_messages(session))
    prompt = PromptData(
        level1_content=level1(session),
        level2_content=level2(session),
        session_messages=[render(m) for m in messages],
    )
    return prompt, messages
