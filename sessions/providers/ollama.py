"""Ollama's native chat API (``/api/chat``), for local models: seed 003 section 11.

Messages are the OpenAI-style ones (system first, then fused turns). Streaming is off: the processor
wants one complete answer. Ollama reports no cache figures, so every prompt token counts as input.

Config (built by sessions/hosted.py from an operator's provider profile): ``model`` (required),
``base_url`` (default ``http://localhost:11434``, which only an ``internal`` profile may reach),
optional ``temperature`` and ``max_tokens`` (sent as ``options.temperature`` /
``options.num_predict``), ``timeout`` (seconds), ``api_key`` (optional bearer token, for Ollama
behind an authenticating proxy).
"""

from __future__ import annotations

from typing import Any

from sessions.providers.base import AIResponse, ErrorCategory, PromptData
from sessions.providers.http import count, dig, post_json, provider_error, text
from sessions.providers.openai import base_url, bearer, chat_messages

DEFAULT_BASE_URL = "http://localhost:11434"
OPTION_NAMES = {"temperature": "temperature", "max_tokens": "num_predict"}


class OllamaProvider:
    name = "ollama"

    def query(self, prompt: PromptData, config: dict[str, Any]) -> AIResponse:
        if not config.get("model"):
            return provider_error("ollama config: 'model' is required", ErrorCategory.CONFIGURATION)
        url = f"{base_url(config, DEFAULT_BASE_URL)}/api/chat"
        data = post_json(url, build_request(prompt, config), bearer(config), config, secrets=[config.get("api_key")])
        return data if isinstance(data, AIResponse) else parse_response(data)


def build_request(prompt: PromptData, config: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"model": config["model"], "messages": chat_messages(prompt), "stream": False}
    options = {ours: config[theirs] for theirs, ours in OPTION_NAMES.items() if config.get(theirs) is not None}
    if options:
        body["options"] = options
    return body


def parse_response(data: dict[str, Any]) -> AIResponse:
    content = dig(data, "message", "content")
    if not isinstance(content, str):
        return provider_error("ollama: the answer has no message.content text", ErrorCategory.INVALID_RESPONSE)
    return AIResponse(
        success=True,
        content=content,
        input_tokens=count(data, "prompt_eval_count"),
        output_tokens=count(data, "eval_count"),
        model=text(data, "model"),
        stop_reason=text(data, "done_reason"),
        provider_duration_ms=count(data, "total_duration") // 1_000_000 or None,  # nanoseconds
    )
