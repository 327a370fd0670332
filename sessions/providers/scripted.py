"""A provider that replays recorded answers, for tests and demos: no HTTP, fully deterministic.

It fabricates a model, so only server-side code (the demo loader, tests) may set one up: scripted
provider profiles are created by the system actor only, and no API caller can name one.

It keeps no state of its own. The answer given is number N of ``config["responses"]``, where N is the
number of AI messages already in the prompt, so a resumed (or retried) session continues exactly
where it was.

Config:

* ``responses`` (list of str): the answers, in order.
* ``repeat_last`` (bool, default false): past the end, answer the last one again; otherwise the
  call fails with ``"script exhausted"``, a provider error (``network_error=False``) that ends the
  session like any refusal would.
* ``network_errors_at`` (list of int): answer indexes whose call fails with ``network_error=True``,
  as if the provider were unreachable, on every attempt (an AUTOMATION keeps retrying every 30 s).
* ``simulate_actions`` (bool): read by the processor, not here: the platform reports the AI's
  actions as done, each result marked ``"simulated": true`` (nothing ran; there is no agent).

Token counts are word counts (prompt words as input, answer words as output), so that limits and
cost displays have deterministic, non-zero figures to show.
"""

from __future__ import annotations

from typing import Any

from sessions.providers.base import AIResponse, ErrorCategory, PromptData
from sessions.providers.http import provider_error

EXHAUSTED = "script exhausted"


class ScriptedProvider:
    name = "scripted"

    def query(self, prompt: PromptData, config: dict[str, Any]) -> AIResponse:
        responses = config.get("responses", [])
        if not isinstance(responses, list) or not all(isinstance(item, str) for item in responses):
            return provider_error("scripted config: 'responses' must be a list of strings", ErrorCategory.CONFIGURATION)
        index = response_index(prompt)
        if _fails_now(config, index):
            return AIResponse(
                success=False,
                network_error=True,
                error_category=ErrorCategory.NETWORK,
                error_detail=f"scripted network error at response {index}",
            )
        if index < len(responses):
            return _answer(prompt, responses[index])
        if config.get("repeat_last") and responses:
            return _answer(prompt, responses[-1])
        return provider_error(EXHAUSTED, ErrorCategory.CONFIGURATION)


def response_index(prompt: PromptData) -> int:
    """How many answers the session has already received: the next one to give."""
    return sum(1 for message in prompt.session_messages if message.sender == "AI")


def _fails_now(config: dict[str, Any], index: int) -> bool:
    return index in (config.get("network_errors_at") or [])


def _answer(prompt: PromptData, content: str) -> AIResponse:
    texts = [prompt.level1_content, prompt.level2_content, *(message.text for message in prompt.session_messages)]
    return AIResponse(
        success=True,
        content=content,
        input_tokens=sum(len(text.split()) for text in texts),
        output_tokens=len(content.split()),
    )
