"""A provider that replays recorded answers, for tests and demos: no HTTP, fully deterministic.

It keeps no state of its own. The answer given is number N of ``config["responses"]``, where N is the
number of AI messages already in the prompt, so a resumed (or retried) session continues exactly
where it was.

Config:

* ``responses`` (list of str): the answers, in order.
* ``repeat_last`` (bool, default false): past the end, answer the last one again; otherwise the
  call fails with ``"script exhausted"``, a provider error (``network_error=False``) that ends the
  session like any refusal would.
* ``network_errors_at`` (list of int): answer indexes whose call fails with ``network_error=True``,
  as if the provider were unreachable. Without ``once`` such an index fails on every attempt.
* ``once`` (bool, default false): a failing index succeeds when the prompt's last message is a
  SYSTEM message whose text starts with ``"NETWORK_ERROR"`` (the processor renders system messages
  as ``"<TYPE>: <summary>"``), i.e. on the retry that follows the recorded failure. This only works
  if that message reaches the prompt; the seed filters NETWORK_ERROR messages out of prompts, in
  which case every attempt fails.

Token counts are word counts (prompt words as input, answer words as output), so that limits and
cost displays have deterministic, non-zero figures to show.
"""

from __future__ import annotations

from typing import Any

from sessions.providers.base import AIResponse, PromptData
from sessions.providers.http import provider_error

EXHAUSTED = "script exhausted"
NETWORK_ERROR_PREFIX = "NETWORK_ERROR"


class ScriptedProvider:
    name = "scripted"

    def query(self, prompt: PromptData, config: dict[str, Any]) -> AIResponse:
        responses = config.get("responses", [])
        if not isinstance(responses, list) or not all(isinstance(item, str) for item in responses):
            return provider_error("scripted config: 'responses' must be a list of strings")
        index = response_index(prompt)
        if _fails_now(prompt, config, index):
            return AIResponse(
                success=False, network_error=True, error_message=f"scripted network error at response {index}"
            )
        if index < len(responses):
            return _answer(prompt, responses[index])
        if config.get("repeat_last") and responses:
            return _answer(prompt, responses[-1])
        return provider_error(EXHAUSTED)


def response_index(prompt: PromptData) -> int:
    """How many answers the session has already received: the next one to give."""
    return sum(1 for message in prompt.session_messages if message.sender == "AI")


def _fails_now(prompt: PromptData, config: dict[str, Any], index: int) -> bool:
    if index not in (config.get("network_errors_at") or []):
        return False
    return not (config.get("once") and _follows_network_error(prompt))


def _follows_network_error(prompt: PromptData) -> bool:
    if not prompt.session_messages:
        return False
    last = prompt.session_messages[-1]
    return last.sender == "SYSTEM" and last.text.startswith(NETWORK_ERROR_PREFIX)


def _answer(prompt: PromptData, content: str) -> AIResponse:
    texts = [prompt.level1_content, prompt.level2_content, *(message.text for message in prompt.session_messages)]
    return AIResponse(
        success=True,
        content=content,
        input_tokens=sum(len(text.split()) for text in texts),
        output_tokens=len(content.split()),
    )
