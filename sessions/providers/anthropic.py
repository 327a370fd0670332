"""Anthropic Messages API with prompt caching: seed 003 section 11, "ClaudeProvider - Cache control".

Three cache breakpoints (``cache_control: {"type": "ephemeral"}``), the prefix before each one being
reusable by the next call:

1. the level 1 system block (documentation: changes rarely),
2. the level 2 system block (always-send data: changes sometimes),
3. the last block of the last message (the whole history: the next call extends it).

The API wants a conversation that starts with a user message and alternates. Fusion (shared with
the other providers, see ``openai.merge_turns``) gives alternation; a history that opens with an AI
message gets a "(conversation start)" user turn in front. Fused turns keep one text block per
session message, and the last message is always an array so its last block can carry breakpoint 3.
A history ending on an AI message gets a "(continue)" user turn (``openai.CONTINUE``): a trailing
assistant turn would be taken by the API as a prefill of the answer.

Config (built by sessions/hosted.py from an operator's provider profile): ``model`` and ``api_key``
(required), ``base_url`` (default ``https://api.anthropic.com``), ``internal`` (see http.py),
``max_tokens`` (default 4096), optional ``temperature`` and ``timeout`` (seconds).
"""

from __future__ import annotations

from typing import Any

from sessions.providers.base import AIResponse, ErrorCategory, PromptData
from sessions.providers.http import count, post_json, provider_error, text
from sessions.providers.openai import Turn, base_url, merge_turns

DEFAULT_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
CACHE_CONTROL = {"type": "ephemeral"}
CONVERSATION_START = "(conversation start)"
# The API refuses empty text blocks; a placeholder keeps the block (and its breakpoint) in place.
EMPTY_TEXT = "(empty)"


class AnthropicProvider:
    name = "anthropic"

    def query(self, prompt: PromptData, config: dict[str, Any]) -> AIResponse:
        for required in ("model", "api_key"):
            if not config.get(required):
                return provider_error(f"anthropic config: {required!r} is required", ErrorCategory.CONFIGURATION)
        api_key = config["api_key"]
        headers = {"x-api-key": api_key, "anthropic-version": ANTHROPIC_VERSION}
        url = f"{base_url(config, DEFAULT_BASE_URL)}/v1/messages"
        data = post_json(url, build_request(prompt, config), headers, config, secrets=[api_key])
        return data if isinstance(data, AIResponse) else parse_response(data)


def build_request(prompt: PromptData, config: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": config["model"],
        "max_tokens": config.get("max_tokens") or DEFAULT_MAX_TOKENS,
        "system": system_blocks(prompt),
        "messages": claude_messages(prompt),
    }
    if config.get("temperature") is not None:
        body["temperature"] = config["temperature"]
    return body


def system_blocks(prompt: PromptData) -> list[dict[str, Any]]:
    """Levels 1 and 2, each its own block with its own cache breakpoint."""
    return [_block(prompt.level1_content, cached=True), _block(prompt.level2_content, cached=True)]


def claude_messages(prompt: PromptData) -> list[dict[str, Any]]:
    """Fused, alternating, user-first messages; the last one in array form carrying breakpoint 3."""
    turns = merge_turns(prompt.session_messages)
    if not turns or turns[0].role != "user":
        turns.insert(0, Turn("user", (CONVERSATION_START,)))
    messages = [_message(turn) for turn in turns[:-1]]
    last = turns[-1]
    blocks = [_block(text) for text in last.texts[:-1]] + [_block(last.texts[-1], cached=True)]
    return [*messages, {"role": last.role, "content": blocks}]


def _message(turn: Turn) -> dict[str, Any]:
    """A lone text stays a plain string; a fused turn keeps one block per session message."""
    if len(turn.texts) == 1:
        return {"role": turn.role, "content": turn.texts[0] or EMPTY_TEXT}
    return {"role": turn.role, "content": [_block(text) for text in turn.texts]}


def _block(text: str, cached: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text or EMPTY_TEXT}
    if cached:
        block["cache_control"] = dict(CACHE_CONTROL)
    return block


def parse_response(data: dict[str, Any]) -> AIResponse:
    """Text blocks joined as they come; ``input_tokens`` already excludes cache writes and reads."""
    blocks = data.get("content")
    if not isinstance(blocks, list):
        return provider_error("anthropic: the answer has no content array", ErrorCategory.INVALID_RESPONSE)
    answer = "".join(
        block["text"] for block in blocks if isinstance(block, dict) and isinstance(block.get("text"), str)
    )
    return AIResponse(
        success=True,
        content=answer,
        input_tokens=count(data, "usage", "input_tokens"),
        output_tokens=count(data, "usage", "output_tokens"),
        cache_write_tokens=count(data, "usage", "cache_creation_input_tokens"),
        cache_read_tokens=count(data, "usage", "cache_read_input_tokens"),
        response_id=text(data, "id"),
        model=text(data, "model"),
        stop_reason=text(data, "stop_reason"),
    )
