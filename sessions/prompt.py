"""PromptData for a session (seed 003 section 10): level 1 documentation, level 2 always-send
data, and the messages the model may see. Regenerated at every call, never stored.

Both levels are made of chunks (sessions/budget.py) trimmed together under the agent's token
budget: its manifest's ``memory.short_term.max_tokens`` when ``memory.short_term.enabled`` (seed 001),
else SESSION_PROMPT_MAX_TOKENS.

* Level 1: the operators' documentation chunks (PromptChunk, by importance) and the limits of the
  session's type as they apply to this agent (required).
* Level 2: who the agent is and the tools its manifest grants (required); its manifest's
  invariants (required: they hold whatever it is asked); the answers to the data commands its
  manifest marks ``sessions.always_send`` (the seed's ``always_send`` tool data, run at each call
  as the agent sees the platform); and, when the session names a story, the step-0 memory block
  (seed 004) for that story, domain and project.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from agents.registry import manifest_document
from governance.kernel.principals import Principal
from sessions import budget, executor, hooks
from sessions import limits as session_limits
from sessions.commands import DataCommand, formatted_data, is_delegated
from sessions.machine import SessionType, SystemMessageType
from sessions.models import AISession, PromptChunk, SessionMessage
from sessions.providers import anthropic, openai
from sessions.providers.base import PromptData, PromptMessage

logger = logging.getLogger(__name__)

HIDDEN_SYSTEM_TYPES = (SystemMessageType.NETWORK_ERROR.value, SystemMessageType.SESSION_TIMEOUT.value)
# Level 2's optional chunks, against the operators' level-1 chunks (PromptChunk.importance, 50 by default).
ALWAYS_SEND_IMPORTANCE = 70
MEMORY_IMPORTANCE = 60
MEMORY_UNAVAILABLE = "_Memory is unavailable right now; carry on without it._"
QUERY_CHARS = 2000


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


def _level1_chunks(session: AISession) -> list[budget.Chunk]:
    chunks = [
        budget.Chunk(f"doc:{chunk.key}", f"## {chunk.title}\n{chunk.body}", chunk.importance)
        for chunk in PromptChunk.objects.filter(enabled=True)
        if not chunk.session_types or session.type in chunk.session_types
    ]
    return [*chunks, budget.Chunk("limits", _limits_chunk(session), required=True)]


def _identity(session: AISession, document: dict[str, Any]) -> str:
    """Who the agent is and the tools its manifest grants."""
    agent = session.agent
    tools = [
        f"- {tool['tool_id']} ({tool['permissions']}, {tool['rate_limit']}/min"
        + (", needs approval)" if tool.get("requires_approval") else ")")
        for tool in document["tools"]
    ]
    return "\n".join(
        [
            f"Agent {agent.agent_id} ({document['name']}), {agent.role} in {agent.domain}, "
            f"manifest {document['version']}.",
            "Tools:",
            *tools,
        ]
    )


def _invariants(document: dict[str, Any]) -> str | None:
    invariants = (document.get("validation") or {}).get("invariants") or []
    if not invariants:
        return None
    return "\n".join(["## Invariants", "Always true, whatever you are asked:", *(f"- {item}" for item in invariants)])


def _always_send(session: AISession, document: dict[str, Any]) -> str | None:
    """The answers to the manifest's always-send commands, run now as the agent sees the platform
    (periods relative to now, as in automations). A command on the agent's own tools cannot be
    answered here: the model is told to ask for it."""
    wanted = (document.get("sessions") or {}).get("always_send") or []
    if not wanted:
        return None
    commands = [DataCommand.from_dict({**item, "isRelative": True}) for item in wanted]
    batch = executor.execute(
        [command for command in commands if not is_delegated(command)],
        agent=session.agent,
        now=timezone.now(),
        day_start_hour=settings.SESSION_DAY_START_HOUR,
        week_start_day=settings.SESSION_WEEK_START_DAY,
    )
    parts = ["## Always-send data"]
    if batch.results:
        parts.append(formatted_data(batch.results))
    parts += [
        f"- {command.type}: your own tool's data, not the platform's; ask for it with a data command."
        for command in commands
        if is_delegated(command)
    ]
    return "\n\n".join(parts)


def _memory_query(session: AISession) -> str:
    """What the block's learnings and watch notes are searched by: the session's name and its
    first user message (its instructions), stable across the session's calls."""
    first = session.messages.filter(sender="USER", removed_at__isnull=True).order_by("seq").first()
    text = ((first.rich_content or {}).get("linearText") or first.text_content or "") if first else ""
    return f"{session.name} {text}"[:QUERY_CHARS]


def memory_block(session: AISession, *, record: bool) -> str:
    """The step-0 block (seed 004) for the story the session names, through hooks.SESSION_MEMORY.

    Never fails: the block degrades section by section by itself, and anything else (the hook
    missing, a database error) leaves a line saying memory is unavailable, in its own savepoint so
    the prompt's transaction goes on. With ``record``, the learnings served are recorded as
    injections (they feed reuse scores) the first time the session is served, never again: the
    prompt is rebuilt at every call, and each rebuild is not a new reuse."""
    try:
        with transaction.atomic():
            first = record and _claim_first_serve(session)
            block = hooks.SESSION_MEMORY.get().build_block(
                actor=Principal(agent=session.agent),
                story=session.story,
                domain=(session.domain or session.agent.domain or "core").lower(),
                project=session.project,
                query_text=_memory_query(session),
                record=first,
            )
            markdown = str(block["markdown"]).strip()
    except Exception as exc:  # the prompt goes on without memory (INV-295-15, as the block itself)
        logger.warning("[prompt] memory block of session %s unavailable: %r", session.pk, exc)
        markdown = MEMORY_UNAVAILABLE
    return f"## Memory (step 0) for story {session.story}\n\n{markdown}"


def _claim_first_serve(session: AISession) -> bool:
    """True once per session: whoever marks it served first records the injections."""
    claimed = AISession.objects.filter(pk=session.pk, memory_served_at__isnull=True)
    return claimed.update(memory_served_at=timezone.now()) == 1


def _level2_chunks(session: AISession, *, record: bool) -> list[budget.Chunk]:
    agent = session.agent
    if agent.active_manifest_id is None:
        return [
            budget.Chunk(
                "identity", f"Agent {agent.agent_id} has no active manifest: it may not call tools.", required=True
            )
        ]
    document = manifest_document(agent.active_manifest_id)
    chunks = [budget.Chunk("identity", _identity(session, document), required=True)]
    invariants = _invariants(document)
    if invariants:
        chunks.append(budget.Chunk("invariants", invariants, required=True))
    always = _always_send(session, document)
    if always:
        chunks.append(budget.Chunk("always_send", always, ALWAYS_SEND_IMPORTANCE))
    if session.story:
        chunks.append(budget.Chunk("memory", memory_block(session, record=record), MEMORY_IMPORTANCE))
    return chunks


def token_budget(session: AISession) -> int:
    """The manifest's memory.short_term.max_tokens when its short-term memory is enabled (seed
    001: ``enabled`` switches the agent's own context window on), else SESSION_PROMPT_MAX_TOKENS:
    a disabled short-term memory, the default, declares no window of its own to fit."""
    manifest_id = session.agent.active_manifest_id
    short_term = ((manifest_document(manifest_id).get("memory") or {}) if manifest_id else {}).get("short_term") or {}
    if not short_term.get("enabled"):
        return settings.SESSION_PROMPT_MAX_TOKENS
    return short_term.get("max_tokens") or settings.SESSION_PROMPT_MAX_TOKENS


def levels(session: AISession, *, record: bool = False) -> tuple[str, str]:
    """Levels 1 and 2, their chunks trimmed together under the agent's token budget."""
    first, second = _level1_chunks(session), _level2_chunks(session, record=record)
    kept = {chunk.key for chunk in budget.trim([*first, *second], token_budget(session))}

    def joined(chunks: list[budget.Chunk]) -> str:
        return "\n\n".join(chunk.text for chunk in chunks if chunk.key in kept)

    return joined(first), joined(second)


def level1(session: AISession) -> str:
    return levels(session)[0]


def level2(session: AISession) -> str:
    return levels(session)[1]


def visible_messages(session: AISession) -> QuerySet[SessionMessage]:
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
    """The prompt a model call is made with (the agent's GET /prompt, a hosted call): its memory
    block is served, and recorded the first time."""
    messages = list(visible_messages(session))
    first, second = levels(session, record=True)
    prompt = PromptData(level1_content=first, level2_content=second, session_messages=[render(m) for m in messages])
    return prompt, messages
