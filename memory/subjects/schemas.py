"""The subject memory API's request and response bodies."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema

from memory.subjects.documents import TRAITS


class ImportIn(Schema):
    conversations: dict[str, Any] | None = None
    facts: dict[str, Any] | None = None
    embeddings: dict[str, Any] | None = None
    personality: dict[str, Any] | None = None
    emotion_history: dict[str, Any] | None = None


class ImportCountsOut(Schema):
    """Rows written per document given (a document left out of the import is left out here too)."""

    conversations: int | None = None
    facts: int | None = None
    embeddings: int | None = None
    personality: int | None = None
    emotion_history: int | None = None


class SubjectExportOut(Schema):
    """The five seed-002 documents, each in the seed's shape (version 1.0); `personality` and
    `emotion_history` are null for a subject that has none."""

    conversations: dict[str, Any]
    facts: dict[str, Any]
    embeddings: dict[str, Any]
    personality: dict[str, Any] | None
    emotion_history: dict[str, Any] | None


class EmotionOut(Schema):
    emotion: str
    intensity: float
    timestamp: datetime


class SystemPromptOut(Schema):
    prompt: str


class InteractionsOut(Schema):
    """The traits after the update; `updated` says whether this call moved them (every update_frequency
    interactions), and `changes` how much each trait moved."""

    traits: dict[str, float]
    total_interactions: int
    updated: bool
    changes: dict[str, Any]


class FactCreatedOut(Schema):
    id: str = Field(..., description="The fact's id in the subject's documents (pref_004, event_002, rel_003).")


class MemoryHit(Schema):
    id: str
    type: str
    text: str
    score: float


class EmotionIn(Schema):
    emotion: str = Field(..., min_length=1, max_length=40)
    intensity: float = Field(..., ge=0.0, le=1.0)
    context: str = Field("", max_length=500)
    triggered_by: Literal["user_message", "assistant_response", "system"]
    timestamp: datetime | None = None

    def as_fields(self) -> dict[str, Any]:
        """The arguments of ``services.record_emotion`` (``timestamp`` is when it was felt)."""
        return {
            "emotion": self.emotion,
            "intensity": self.intensity,
            "context": self.context,
            "triggered_by": self.triggered_by,
            "at": self.timestamp,
        }


class InteractionsIn(Schema):
    count: int = Field(1, ge=1, le=10_000)
    feedback: dict[Literal[TRAITS], float] = Field(default_factory=dict)  # type: ignore[valid-type]
    reason: str = Field("interactions", max_length=300)


class FactIn(Schema):
    kind: Literal["preference", "event", "relationship"]
    values: dict[str, Any]


class AllowedAgentsIn(Schema):
    agents: list[str] = Field(..., max_length=1000, description="Agent ids; an empty list lifts the restriction.")


class AllowedAgentsOut(Schema):
    agents: list[str]
