"""What every AI provider takes and returns (seed 003 sections 2 and 11). Pure: no Django.

The processor builds a PromptData (level 1 documentation, level 2 always-send data, the session
messages the model may see) and a provider turns it into its own API's request, calls it, and
reports an AIResponse. Providers never raise for a failed call: they answer success=False with
``network_error`` telling apart "could not reach it" (retried in AUTOMATION) from "it refused"
(a provider/system error, which ends the session).

A failure has two faces. ``error_category`` and ``status_code`` are all that may reach an agent
(session messages, API answers): the provider's own words can carry internal addresses, echoed
keys or whatever an internal service answered, so ``error_detail`` (already scrubbed of the
secret) is for the server log only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
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


class ErrorCategory(StrEnum):
    """What kind of failure, in a word an agent may see."""

    NETWORK = "network"  # nothing listening, DNS failure, dropped connection, TLS failure
    TIMEOUT = "timeout"
    HTTP_STATUS = "http_status"  # the provider answered a non-2xx status (redirects included)
    INVALID_RESPONSE = "invalid_response"  # not JSON, or JSON of an unexpected shape
    CONFIGURATION = "configuration"  # profile unusable: no model, secret missing, bad timeout
    REFUSED_ADDRESS = "refused_address"  # the outbound guard refused the destination


@dataclass(frozen=True)
class AIResponse:
    success: bool
    content: str = ""
    error_category: ErrorCategory | None = None
    status_code: int | None = None
    error_detail: str | None = None  # server log only: never into messages or API answers
    network_error: bool = False
    retry_after: int | None = None  # seconds the provider asked to wait (HTTP Retry-After on 429/503)
    input_tokens: int = 0  # uncached input tokens
    output_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    # What the provider says of its answer, for the AI message's executionMetadata (seed 003):
    response_id: str = ""  # its id of this answer (OpenAI, Anthropic); "" when it gives none (Ollama)
    model: str = ""  # the model that answered, as the provider names it (may be more precise than asked)
    stop_reason: str = ""  # why it stopped: "stop", "end_turn", "length", "max_tokens"...
    provider_duration_ms: int | None = None  # its own timing, when it reports one (Ollama)

    @property
    def tokens_used(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_write_tokens + self.cache_read_tokens

    @property
    def public_summary(self) -> str:
        """The failure as an agent may see it: the category and the HTTP status, nothing else."""
        category = (self.error_category or ErrorCategory.CONFIGURATION).value
        status = f" (HTTP {self.status_code})" if self.status_code is not None else ""
        return f"AI provider error: {category}{status}"


class Provider(Protocol):
    name: str

    def query(self, prompt: PromptData, config: dict[str, Any]) -> AIResponse: ...
