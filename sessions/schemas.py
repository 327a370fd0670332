"""API schemas of the sessions app (camelCase as seed 003's AIState)."""

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from ninja import Field, Schema
from pydantic import BaseModel, ConfigDict, field_validator

from governance.kernel.bounds import Count

MAX_RETRY_AFTER_SECONDS = 24 * 3600  # a provider's wait past a day is no wait but an outage


class SeedMessageIn(Schema):
    text: str | None = Field(None, max_length=100_000)
    segments: list[dict[str, Any]] | None = None


class SessionIn(Schema):
    type: Literal["CHAT", "AUTOMATION"]
    name: str = Field(..., min_length=1, max_length=200)
    requireValidation: bool = False
    messages: list[SeedMessageIn] | None = Field(
        None,
        max_length=50,
        description="AUTOMATION only: its instructions, as an automation's SEED messages (text, or segments "
        "with enrichments, periods relative); the session starts by running their enrichments.",
    )
    story: str = Field("", max_length=100, description="The story worked on: level 2 carries its step-0 memory block")
    domain: str = Field("", max_length=100, description="The block's domain (default: the agent's)")
    project: str = Field("", max_length=100, description="The block's project")


class AIStateOut(Schema):
    sessionId: UUID = Field(..., alias="session_id")
    name: str
    agentId: str = Field(..., alias="agent.agent_id")
    phase: str
    sessionType: str = Field(..., alias="type")
    totalRoundtrips: int = Field(..., alias="total_roundtrips")
    lastEventTime: datetime | None = Field(None, alias="last_event_time")
    lastUserInteractionTime: datetime | None = Field(None, alias="last_user_interaction_time")
    waitingContext: dict[str, Any] | None = Field(None, alias="waiting_context")
    isActive: bool = Field(..., alias="is_active")
    endReason: str | None = Field(None, alias="end_reason")
    requireValidation: bool = Field(..., alias="require_validation")
    automationId: int | None = Field(None, alias="automation_id")
    queuedAt: datetime | None = Field(None, alias="queued_at")
    scheduledExecutionTime: datetime | None = Field(
        None, alias="scheduled_execution_time", description="The slot a SCHEDULED automation run was due in"
    )
    tokensUsed: dict[str, int] = Field(..., alias="tokens_used")
    createdAt: datetime = Field(..., alias="created_at")
    providerId: str = Field(..., alias="provider_id", description="The hosting provider; empty when the agent calls")
    providerSessionId: str = Field(
        ..., alias="provider_session_id", description="The provider's id of its latest answer (hosted sessions)"
    )
    story: str
    domain: str
    project: str


class EventIn(Schema):
    type: str = Field(..., min_length=1, max_length=50, description="An AIEvent name as in seed 003")
    payload: dict[str, Any] = Field(default_factory=dict)


class EventOut(Schema):
    state: AIStateOut
    next: dict[str, Any]


class MessageOut(Schema):
    id: UUID = Field(..., alias="message_id")
    seq: int
    timestamp: datetime
    sender: str
    richContent: dict[str, Any] | None = Field(None, alias="rich_content")
    textContent: str | None = Field(None, alias="text_content")
    aiMessage: dict[str, Any] | None = Field(None, alias="ai_message")
    aiMessageJson: str | None = Field(None, alias="ai_message_json")
    systemMessage: dict[str, Any] | None = Field(None, alias="system_message")
    executionMetadata: dict[str, Any] | None = Field(None, alias="execution_metadata")
    excludeFromPrompt: bool = Field(..., alias="exclude_from_prompt")


class PromptOut(Schema):
    level1Content: str
    level2Content: str
    sessionMessages: list[MessageOut]
    system: str | list[dict[str, Any]] | None = Field(
        None, description="With ?format=: the provider's system part (Anthropic: two cached blocks)."
    )
    messages: list[dict[str, Any]] | None = Field(
        None,
        description="With ?format=: the provider-ready turns, fused, ending on the user side, "
        "with Anthropic's cache breakpoints; send them as they are.",
    )


class NoProviderConfig(Schema):
    """Gone: a URL, key or key variable from the caller is what let agents aim the server's key at
    any address. Kept as a field so that each key sent is refused with its own path."""

    model_config = ConfigDict(extra="forbid")


CRON_HELP = (
    "Instead of intervalMinutes: five cron fields (minute hour day-of-month month day-of-week, e.g. "
    '"0 9 * * 1-5"), in the server\'s time zone; runs start on the scheduler tick that follows.'
)


class AutomationIn(Schema):
    """Unknown fields are refused (422), `provider` included: the provider comes from the profile."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., min_length=1, max_length=200)
    agentId: str | None = Field(None, description="Required for operators; an agent creates its own.")
    seedSessionId: UUID | None = None
    messages: list[SeedMessageIn] | None = Field(None, description="Creates the SEED session from these.")
    trigger: Literal["MANUAL", "SCHEDULED", "EVENT"] = "SCHEDULED"
    intervalMinutes: int | None = Field(None, ge=1, le=60 * 24 * 366)
    cron: str | None = Field(None, max_length=100, description=CRON_HELP)
    enabled: bool = True
    providerProfile: str | None = Field(
        None,
        max_length=100,
        description="Host the automation on this operator-made provider profile (the server calls the model); "
        "an agent may name only the profiles its manifest lists in provider_profiles.",
    )
    story: str = Field(
        "", max_length=100, description="With messages: the story each run works on (its step-0 memory block)"
    )
    domain: str = Field("", max_length=100, description="The block's domain (default: the agent's)")
    project: str = Field("", max_length=100, description="The block's project")
    event: Literal["job.finished", "learning.promoted"] | None = Field(
        None, description="EVENT automations: the platform event that runs it (seed 003's EVENT trigger)"
    )
    eventFilter: dict[str, Any] | None = Field(
        None,
        description='Which events run it: job.finished {"agent", "intent", "status": [...]}, '
        'learning.promoted {"domain", "scope"}; absent: every such event',
    )
    providerConfig: NoProviderConfig | None = Field(
        None, description="Removed: any key (base_url, api_key, api_key_env...) is refused; name a providerProfile."
    )


class AutomationOut(Schema):
    id: int
    name: str
    agentId: str = Field(..., alias="agent.agent_id")
    seedSessionId: UUID = Field(..., alias="seed_session_id")
    trigger: str
    intervalMinutes: int | None = Field(None, alias="interval_minutes")
    cron: str | None = None
    enabled: bool
    nextRunAt: datetime | None = Field(None, alias="next_run_at")
    event: str = ""
    eventFilter: dict[str, Any] = Field(default_factory=dict, alias="event_filter")
    provider: str = Field(..., description="The provider profile's provider; empty when not hosted")
    providerProfile: str | None = None

    @staticmethod
    def resolve_providerProfile(obj: Any) -> str | None:
        return obj.profile.name if obj.profile_id else None


class AutomationPatch(Schema):
    """Only the fields sent change. ``intervalMinutes`` or ``cron`` alone replaces the other kind of
    schedule; both at once is a 422. ``name`` and ``enabled`` cannot be null."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, min_length=1, max_length=200)
    enabled: bool | None = None
    intervalMinutes: int | None = Field(None, ge=1, le=60 * 24 * 366)
    cron: str | None = Field(None, max_length=100, description=CRON_HELP)

    @field_validator("name", "enabled")
    @classmethod
    def _not_null(cls, value: Any) -> Any:
        """Runs only on sent values: a name or switch sent as null is refused, left out is kept."""
        if value is None:
            raise ValueError("may be left out, not null")
        return value

    def changes(self) -> dict[str, Any]:
        """The sent fields under the service's names (sessions.automations.CHANGEABLE)."""
        names = {"name": "name", "enabled": "enabled", "intervalMinutes": "interval_minutes", "cron": "cron"}
        return {names[field]: getattr(self, field) for field in self.model_fields_set}


class ProviderProfileIn(Schema):
    """An operator's profile. No key here, ever: `secretName` names the environment variable
    holding it (NAME_FILE works too). Scripted profiles are server-side only (422)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., min_length=1, max_length=100, pattern=r"^[-a-zA-Z0-9_]+$")
    provider: Literal["openai", "anthropic", "ollama"]
    model: str = Field(..., min_length=1, max_length=200)
    baseUrl: str = Field("", max_length=500, description="Empty: the provider's default. https unless internal.")
    secretName: str = Field("", max_length=100, description="NAME of the environment variable with the key")
    internal: bool = Field(False, description="Allow plain http and private/loopback addresses")
    options: dict[str, Any] = Field(default_factory=dict, description="temperature, max_tokens, timeout")
    enabled: bool = True


class ProviderProfileOut(Schema):
    name: str
    provider: str
    model: str
    baseUrl: str = Field(..., alias="base_url")
    secretName: str = Field(..., alias="secret_name")
    secretStatus: str = Field(..., alias="secret_status", description='"set", "missing", or "" when none is named')
    internal: bool
    options: dict[str, Any]
    enabled: bool
    createdBy: str = Field(..., alias="created_by")
    createdAt: datetime = Field(..., alias="created_at")


class ExecuteOut(Schema):
    status: Literal["active", "queued"]
    sessionId: UUID


# --- event payloads (POST /sessions/{id}/events): one schema per AIEvent --------------------------
# Checked by sessions/processor.apply_event for every caller; a wrong type is a 422 whose `loc`
# starts ["body", "payload", ...]. Unknown keys are kept (agents may add their own metadata).


class _Payload(BaseModel):
    model_config = ConfigDict(extra="allow")


class EmptyPayload(_Payload):
    pass


class TokensIn(_Payload):
    input: Count = 0
    output: Count = 0
    cacheWrite: Count = 0
    cacheRead: Count = 0


class UserMessagePayload(_Payload):
    text: str | None = None
    segments: list[dict[str, Any]] | None = None


class AIResponsePayload(_Payload):
    content: str
    tokens: TokensIn | None = None
    metadata: dict[str, Any] | None = None


class ResultIn(_Payload):
    commandId: str
    status: str
    summary: str | None = None
    error: str | None = None
    data: Any = None
    simulated: bool | None = None


class ResultsPayload(_Payload):
    results: list[ResultIn] = Field(default_factory=list)


class ActionsPayload(ResultsPayload):
    allSuccess: bool | None = Field(None, description="Can only lower the outcome: a FAILED result is never a success")


class ValidationPayload(_Payload):
    approved: bool


class CommunicationPayload(_Payload):
    response: Any = Field(..., description="The reviewer's answer (any JSON)")


class SummaryPayload(_Payload):
    # An agent writes these (NetworkErrorOccurred, SystemErrorOccurred): a system message, bounded.
    summary: str | None = Field(None, max_length=2_000)


class CompletionRejectedPayload(_Payload):
    reason: str | None = Field(None, max_length=2_000, description="Why the platform refused the completion")


class NetworkErrorPayload(SummaryPayload):
    retryAfter: int | None = Field(
        None,
        ge=0,
        le=MAX_RETRY_AFTER_SECONDS,
        description="Seconds the provider asked to wait (its Retry-After), at most a day: an AUTOMATION waits "
        "at least this long, and at most an hour, before it calls again",
    )


class SessionCompletedPayload(_Payload):
    endReason: str | None = None


class ParsedPayload(_Payload):
    aiMessageId: str | None = None
    completed: bool = False
    validationRequired: bool = False
    validationContext: dict[str, Any] | None = None
    communicationModule: dict[str, Any] | None = None
    dataCommands: list[dict[str, Any]] | None = None
    actionCommands: list[dict[str, Any]] | None = None


EVENT_PAYLOADS: dict[str, type[_Payload]] = {
    "SessionActivationRequested": EmptyPayload,
    "UserMessageSent": UserMessagePayload,
    "EnrichmentsExecuted": EmptyPayload,
    "AIResponseReceived": AIResponsePayload,
    "AIResponseParsed": ParsedPayload,
    "ValidationReceived": ValidationPayload,
    "CommunicationResponseReceived": CommunicationPayload,
    "DataQueriesExecuted": ResultsPayload,
    "ActionsExecuted": ActionsPayload,
    "CompletionConfirmed": EmptyPayload,
    "CompletionRejected": CompletionRejectedPayload,
    "NetworkErrorOccurred": NetworkErrorPayload,
    "ParseErrorOccurred": SummaryPayload,
    "ActionFailureOccurred": ResultsPayload,
    "NetworkRetryScheduled": EmptyPayload,
    "RetryScheduled": EmptyPayload,
    "NetworkAvailable": EmptyPayload,
    "SystemErrorOccurred": SummaryPayload,
    "SessionCompleted": SessionCompletedPayload,
    "SchedulerHeartbeat": EmptyPayload,
    "PhaseDeadlinePassed": EmptyPayload,
}
