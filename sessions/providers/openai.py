"""OpenAI-compatible chat completions (OpenAI, vLLM, LM Studio, OpenRouter...): seed 003 section 11.

Also home of message fusion, the rule every provider shares: the session keeps USER, SYSTEM and AI
messages as they happened, while chat APIs want alternating user/assistant turns. SYSTEM messages
(enrichments, query results, format errors) are things the model must read, so they travel on the
user side and merge with the user messages around them; consecutive AI messages merge likewise.

Config (built by sessions/hosted.py from an operator's provider profile, never from anything an
agent sends): ``model`` (required), ``api_key`` (the profile's secret, sent as a bearer token when
set: local servers often need none), ``base_url`` (default ``https://api.openai.com/v1``),
``internal`` (see http.py), optional ``temperature``, ``max_tokens`` and ``timeout`` (seconds).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sessions.providers.base import AIResponse, ErrorCategory, PromptData, PromptMessage
from sessions.providers.http import count, dig, post_json, provider_error, text

Role = Literal["user", "assistant"]
DEFAULT_BASE_URL = "https://api.openai.com/v1"
TURN_SEPARATOR = "\n\n"
# A history that ends on the model's own answer (an AUTOMATION continuing after its actions, say)
# gets this user turn: a request must never end on an assistant turn, which Anthropic would take as
# the beginning of its answer (a prefill) and other APIs answer unpredictably.
CONTINUE = "(continue)"


@dataclass(frozen=True)
class Turn:
    """One API-side message: a role and the session texts fused into it, in order."""

    role: Role
    texts: tuple[str, ...]

    @property
    def text(self) -> str:
        return TURN_SEPARATOR.join(self.texts)


def merge_turns(messages: Sequence[PromptMessage]) -> list[Turn]:
    """Fuse consecutive same-side messages (USER and SYSTEM are one side, AI the other), and end
    on the user side (see CONTINUE)."""
    turns: list[Turn] = []
    for message in messages:
        role: Role = "assistant" if message.sender == "AI" else "user"
        if turns and turns[-1].role == role:
            turns[-1] = Turn(role, (*turns[-1].texts, message.text))
        else:
            turns.append(Turn(role, (message.text,)))
    if turns and turns[-1].role == "assistant":
        turns.append(Turn("user", (CONTINUE,)))
    return turns


def system_text(prompt: PromptData) -> str:
    """Level 1 (documentation) then level 2 (always-send data), skipping an empty level."""
    return TURN_SEPARATOR.join(part for part in (prompt.level1_content, prompt.level2_content) if part)


def turn_messages(prompt: PromptData) -> list[dict[str, str]]:
    """The fused user/assistant turns as chat messages."""
    return [{"role": turn.role, "content": turn.text} for turn in merge_turns(prompt.session_messages)]


def chat_messages(prompt: PromptData) -> list[dict[str, str]]:
    """The ``messages`` array of OpenAI-style chat APIs: system first, then the fused turns."""
    system = system_text(prompt)
    return ([{"role": "system", "content": system}] if system else []) + turn_messages(prompt)


def base_url(config: dict[str, Any], default: str) -> str:
    return str(config.get("base_url") or default).rstrip("/")


def bearer(config: dict[str, Any]) -> dict[str, str]:
    """The authorization header when the config has a key: local servers often need none."""
    api_key = config.get("api_key")
    return {"authorization": f"Bearer {api_key}"} if api_key else {}


class OpenAIProvider:
    name = "openai"

    def query(self, prompt: PromptData, config: dict[str, Any]) -> AIResponse:
        if not config.get("model"):
            return provider_error("openai config: 'model' is required", ErrorCategory.CONFIGURATION)
        url = f"{base_url(config, DEFAULT_BASE_URL)}/chat/completions"
        data = post_json(url, build_request(prompt, config), bearer(config), config, secrets=[config.get("api_key")])
        return data if isinstance(data, AIResponse) else parse_response(data)


def build_request(prompt: PromptData, config: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"model": config["model"], "messages": chat_messages(prompt)}
    for option in ("temperature", "max_tokens"):
        if config.get(option) is not None:
            body[option] = config[option]
    return body


def parse_response(data: dict[str, Any]) -> AIResponse:
    """``prompt_tokens`` includes the cached ones: they are reported apart, as cache reads."""
    content = dig(data, "choices", 0, "message", "content")
    if not isinstance(content, str):
        return provider_error(
            "openai: the answer has no choices[0].message.content text", ErrorCategory.INVALID_RESPONSE
        )
    cached = count(data, "usage", "prompt_tokens_details", "cached_tokens")
    return AIResponse(
        success=True,
        content=content,
        input_tokens=max(count(data, "usage", "prompt_tokens") - cached, 0),
        output_tokens=count(data, "usage", "completion_tokens"),
        cache_read_tokens=cached,
        response_id=text(data, "id"),
        model=text(data, "model"),
        stop_reason=text(data, "choices", 0, "finish_reason"),
    )
