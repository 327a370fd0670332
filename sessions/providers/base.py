"""What every AI provider takes and returns (seed 003 sections 2 and 11). Pure: no Django.

The processor builds a PromptData (level 1 documentation, level 2 always-send data, the session
messages the model may see) and a provider turns it into its own API's request, calls it, and
reports an AIResponse. Providers never raise for a failed call: they answer success=False with
``network_error`` telling apart "could not reach it" (retried in AUTOMATION) from "it refused"
(a provider/system error, which ends the session).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Sender = Literal["USER", "AI", "SYSTEM"]
HTTP_TIMEOUT_SECONDS = 120  # seed section 8: two minutes


@dataclass(frozen=True)
class PromptMessage:
    sender: Sender
    text: str


@dataclass(frozen=True)
class PromptData:
    level1_content: str
    level2_content: str
    session_messages: list[PromptMessage] = field(default_factory=list)


@dataclass(frozen=True)
class AIResponse:
    success: bool
    content: str = ""
    error_message: str | None = None
    network_error: bool = False
    input_tokens: int = 0  # uncached input tokens
    output_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0

    @property
    def tokens_used(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_write_tokens + self.cache_read_tokens


class Provider(Protocol):
    name: str

    def query(self, prompt: PromptData, config: dict[str, Any]) -> AIResponse: ...
