"""API schemas of the sessions app (camelCase as seed 003's AIState)."""

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from ninja import Field, Schema


class SessionIn(Schema):
    type: Literal["CHAT", "AUTOMATION"]
    name: str = Field(..., min_length=1, max_length=200)
    requireValidation: bool = False


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
    tokensUsed: dict[str, int] = Field(..., alias="tokens_used")
    createdAt: datetime = Field(..., alias="created_at")


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


class SeedMessageIn(Schema):
    text: str | None = Field(None, max_length=100_000)
    segments: list[dict[str, Any]] | None = None


class AutomationIn(Schema):
    name: str = Field(..., min_length=1, max_length=200)
    agentId: str | None = Field(None, description="Required for operators; an agent creates its own.")
    seedSessionId: UUID | None = None
    messages: list[SeedMessageIn] | None = Field(None, description="Creates the SEED session from these.")
    trigger: Literal["MANUAL", "SCHEDULED", "EVENT"] = "SCHEDULED"
    intervalMinutes: int | None = Field(None, ge=1, le=60 * 24 * 366)
    enabled: bool = True
    provider: Literal["openai", "anthropic", "ollama", "scripted"] | None = None
    providerConfig: dict[str, Any] = Field(default_factory=dict)


class AutomationOut(Schema):
    id: int
    name: str
    agentId: str = Field(..., alias="agent.agent_id")
    seedSessionId: UUID = Field(..., alias="seed_session_id")
    trigger: str
    intervalMinutes: int | None = Field(None, alias="interval_minutes")
    enabled: bool
    nextRunAt: datetime | None = Field(None, alias="next_run_at")
    provider: str


class ExecuteOut(Schema):
    status: Literal["active", "queued"]
    sessionId: UUID
