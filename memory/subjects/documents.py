"""The five JSON documents of seed 002 (conversations, facts, embeddings, personality, emotion
history), as the import/export and API shape of a subject's memory.

Pure: pydantic schemas that check a document and say where it is wrong, the version migrations
a document goes through before import, and the timestamp format of the seed. No Django.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator, model_validator

CURRENT_VERSION = "1.0"
DOCUMENTS = ("conversations", "facts", "embeddings", "personality", "emotion_history")
TRAITS = ("extraversion", "empathie", "humour", "formalité", "curiosité", "enthousiasme", "patience")

Unit = Annotated[float, Field(ge=0.0, le=1.0)]
Text = Annotated[str, StringConstraints(max_length=100_000)]
Name = Annotated[str, StringConstraints(min_length=1, max_length=300)]
ConvId = Annotated[str, StringConstraints(pattern=r"^conv_\d{8}_\d{3,6}$")]


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ConversationIn(_Doc):
    id: ConvId
    start_timestamp: datetime
    end_timestamp: datetime
    message_count: int = Field(ge=0)
    summary: Text
    key_points: list[Text] = []
    topics: list[Name] = []
    overall_sentiment: Literal["positive", "negative", "neutral", "mixed"]
    sentiment_score: float = Field(ge=-1.0, le=1.0)
    dominant_emotion: Annotated[str, StringConstraints(max_length=40)] = ""
    message_ids: list[int] = []


class ConversationsDoc(_Doc):
    version: str
    last_updated: datetime
    conversations: list[ConversationIn]
    total_conversations: int | None = None
    total_messages: int | None = None


class UserProfileIn(_Doc):
    name: Name
    name_confidence: Unit
    name_extracted_from: str = ""
    name_timestamp: datetime | None = None


class PreferenceIn(_Doc):
    id: Annotated[str, StringConstraints(pattern=r"^pref_\d{3,}$")]
    category: Name
    item: Name
    sentiment: Literal["positive", "negative"]  # the seed: "positive" ou "negative"
    confidence: Unit
    extracted_from: str = ""
    timestamp: datetime
    context: Text = ""


class EventIn(_Doc):
    id: Annotated[str, StringConstraints(pattern=r"^event_\d{3,}$")]
    description: Text
    timestamp: datetime
    importance: Unit
    sentiment: Literal["positive", "negative", "neutral"]
    extracted_from: str = ""
    related_topics: list[Name] = []


class RelationshipIn(_Doc):
    id: Annotated[str, StringConstraints(pattern=r"^rel_\d{3,}$")]
    entity_1: Name
    relation_type: Name
    entity_2: Name
    confidence: Unit
    extracted_from: str = ""


class FactsDoc(_Doc):
    version: str
    last_updated: datetime
    user_profile: UserProfileIn | None = None
    preferences: list[PreferenceIn] = []
    events: list[EventIn] = []
    relationships: list[RelationshipIn] = []
    total_preferences: int | None = None
    total_events: int | None = None
    total_relationships: int | None = None


class EmbeddingIn(_Doc):
    id: Name
    type: Annotated[str, StringConstraints(min_length=1, max_length=40)]
    text: Annotated[str, StringConstraints(min_length=1, max_length=100_000)]
    embedding: list[float] | None = None
    timestamp: datetime


class EmbeddingsDoc(_Doc):
    version: str
    model: Name
    embedding_dim: int = Field(ge=1, le=2000)
    last_updated: datetime
    embeddings: list[EmbeddingIn]
    total_embeddings: int | None = None

    @model_validator(mode="after")
    def _dimensions(self) -> EmbeddingsDoc:
        for index, entry in enumerate(self.embeddings):
            if entry.embedding is not None and len(entry.embedding) != self.embedding_dim:
                size = len(entry.embedding)
                raise ValueError(f"embeddings[{index}] has {size} dimensions, embedding_dim says {self.embedding_dim}")
        return self


def _traits(value: dict[str, float]) -> dict[str, float]:
    missing = [t for t in TRAITS if t not in value]
    unknown = [t for t in value if t not in TRAITS]
    if missing or unknown:
        raise ValueError(f"the seven traits are {', '.join(TRAITS)} (missing: {missing}, unknown: {unknown})")
    return value


class TraitSnapshotIn(_Doc):
    timestamp: datetime
    traits: dict[str, Unit]
    reason: Annotated[str, StringConstraints(max_length=500)]
    interactions_count: int | None = Field(None, ge=0)
    changes: dict[str, str] | None = None

    _check = field_validator("traits")(_traits)


class PersonalityDoc(_Doc):
    version: str
    last_updated: datetime
    current_traits: dict[str, Unit]
    trait_history: list[TraitSnapshotIn] = []
    total_interactions: int = Field(0, ge=0)
    last_trait_update: datetime | None = None
    update_frequency: int = Field(50, ge=1)

    _check = field_validator("current_traits")(_traits)


Emotion = Annotated[str, StringConstraints(min_length=1, max_length=40)]


class EmotionEventIn(_Doc):
    timestamp: datetime
    emotion: Emotion
    intensity: Unit
    context: Annotated[str, StringConstraints(max_length=500)] = ""
    triggered_by: Literal["user_message", "assistant_response", "system"]


class TransitionIn(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    from_: Emotion = Field(alias="from")
    to: Emotion
    count: int = Field(ge=0)
    avg_duration_seconds: int = Field(ge=0)  # the seed's int: whole seconds (120.0 is read as 120, 120.5 refused)


class StatisticsIn(_Doc):
    total_emotions_recorded: int = Field(ge=0)
    most_frequent_emotion: Emotion | None = None
    most_frequent_emotion_count: int = Field(0, ge=0)
    avg_intensity_overall: Unit = 0.0
    total_transitions: int = Field(0, ge=0)


class EmotionHistoryDoc(_Doc):
    version: str
    last_updated: datetime
    max_history: int = Field(100, ge=1, le=10_000)
    current_emotion: Emotion | None = None
    current_intensity: Unit | None = None
    history: list[EmotionEventIn] = []
    transitions: list[TransitionIn] = []
    statistics: StatisticsIn | None = None


SCHEMAS: dict[str, type[_Doc]] = {
    "conversations": ConversationsDoc,
    "facts": FactsDoc,
    "embeddings": EmbeddingsDoc,
    "personality": PersonalityDoc,
    "emotion_history": EmotionHistoryDoc,
}

# --- Version migrations -------------------------------------------------------------------------

Migration = Callable[[dict[str, Any]], dict[str, Any]]
_MIGRATIONS: dict[tuple[str, str], tuple[str, Migration]] = {}


def migration(document: str, from_version: str, to_version: str) -> Callable[[Migration], Migration]:
    """Register how a document of ``from_version`` becomes ``to_version`` (seed 002, "Migrations
    futures"). Documents older than CURRENT_VERSION go through the chain before import."""

    def register(function: Migration) -> Migration:
        _MIGRATIONS[(document, from_version)] = (to_version, function)
        return function

    return register


def upgrade(document: str, data: Any) -> Any:
    """Apply registered migrations until the document is at CURRENT_VERSION; a version with no
    way forward is left as it is and the schema refuses it."""
    seen: set[str] = set()
    while isinstance(data, dict) and data.get("version") != CURRENT_VERSION:
        step = _MIGRATIONS.get((document, str(data.get("version"))))
        if step is None or data.get("version") in seen:
            break
        seen.add(data["version"])
        to_version, function = step
        data = function(dict(data))
        data["version"] = to_version
    return data


class DocumentErrors(ValueError):
    """Every problem of every document, each with its path (["facts", "preferences", 0, "id"])."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__(f"{len(errors)} problem(s)")
        self.errors = errors


def parse(documents: dict[str, Any]) -> dict[str, _Doc]:
    """Check the given documents (after migrations): all of them, so every problem is reported
    at once; raise DocumentErrors, or return the parsed documents."""
    errors: list[dict[str, Any]] = []
    parsed: dict[str, _Doc] = {}
    for name, data in documents.items():
        if data is None:
            continue
        data = upgrade(name, data)
        if isinstance(data, dict) and data.get("version") != CURRENT_VERSION:
            message = f"version {data.get('version')!r} is not {CURRENT_VERSION!r} and no migration leads there"
            errors.append({"loc": [name, "version"], "msg": message, "type": "version"})
            continue
        try:
            parsed[name] = SCHEMAS[name].model_validate(data)
        except ValidationError as exc:
            errors += [{"loc": [name, *e["loc"]], "msg": e["msg"], "type": e["type"]} for e in exc.errors()]
    if errors:
        raise DocumentErrors(errors)
    return parsed


def stamp(moment: datetime | None) -> str | None:
    """The seed's timestamp form: UTC with a Z, seconds unless there is a fraction."""
    if moment is None:
        return None
    text = moment.astimezone(UTC).isoformat()
    return text.replace("+00:00", "Z")


def now() -> datetime:
    return datetime.now(UTC)
