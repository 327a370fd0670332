"""The memory API's request and response bodies: learnings, gate results, the injection block,
search, watch notes and clarifications."""

from __future__ import annotations

import json
from datetime import date, datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from ninja import Field, Schema
from pydantic import field_validator

from agents.vocabulary import Value
from memory import clarifications

Story = Field(..., min_length=1, max_length=100)
Name = Field(..., min_length=1, max_length=100)


class LearningIn(Schema):
    story: str = Story
    gate: int = Field(..., ge=0, le=99)
    domain: Value = Field(..., description="A value of the domains registry (GET /api/v1/registries).")
    project: str = Name
    tags: list[str] = Field(default_factory=list, max_length=100)
    text: str = Field(..., min_length=1, max_length=100_000)
    date_created: date | None = None
    job: UUID | None = Field(None, description="The writer's job it was learned in (its provenance).")
    session: UUID | None = Field(None, description="The writer's session it was learned in (its provenance).")


class LearningCreated(Schema):
    id: int
    tags_hash: str
    scope: str
    held: bool = Field(False, description="Held for a reviewer: no block serves it until released.")
    held_reasons: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list, description="E.g. no agent reads the learning's domain.")


class LearningOut(Schema):
    id: int
    story: str
    gate: int
    domain: str
    project: str
    tags: list[str]
    tags_hash: str
    text: str
    scope: str
    reuse_score: float
    date_created: date | None
    created_by: str = Field(description="Who wrote it, in the audit trail's words.")
    author: str | None = Field(description="The agent that wrote it (agent_id); null for a person or an import.")
    job: UUID | None = Field(description="The job it was written in.")
    session: UUID | None = Field(description="The session it was written in.")
    held: bool = Field(description="Held for a reviewer (operators only ever read a held learning).")
    held_reasons: list[str]


class GateResultIn(Schema):
    story: str = Story
    gate: int = Field(..., ge=0, le=99)
    verdict: Literal["GO", "NO_GO"]
    job: UUID | None = None
    session: UUID | None = None


class GateResultOut(Schema):
    id: int
    story: str
    gate: int
    verdict: Literal["GO", "NO_GO"]


class InjectionIn(Schema):
    story: str = Story
    domain: str = Name
    project: str = Name
    query_text: str = Field(
        "",
        description="What the work is about. Never refused: a longer text is cut to what the embedder reads "
        "(memory.injection.QUERY_CHARS); an empty, blank or missing one serves the story's and the "
        "domain's learnings without a similarity search.",
    )

    @field_validator("query_text", mode="before")
    @classmethod
    def _any_query_text(cls, value: Any) -> str:
        """The block never fails for its query (seed 004 "non bloquant", issue 34): null is no query,
        and a value that is not text is searched as its JSON text."""
        if value is None:
            return ""
        if isinstance(value, str):
            return value
        return json.dumps(value, ensure_ascii=False, default=str)


class SectionOut(Schema):
    name: Literal["learnings", "veille", "clarifications"]
    status: Literal["ok", "empty", "unavailable", "disabled"]
    items: list[dict[str, Any]]


class InjectionOut(Schema):
    markdown: str
    sections: list[SectionOut]


class SearchQuery(Schema):
    q: str = Field(..., min_length=1, max_length=10_000)
    kind: Literal["learning", "veille", "clarification"] = "learning"
    k: int = Field(5, ge=1, le=100)
    domain: str | None = None
    project: str | None = None
    impact: Literal["fort", "modere", "faible", "aucun"] | None = None
    verdict: Literal["signal", "bruit", "veille"] | None = None
    tags: list[Annotated[str, Field(min_length=1, max_length=100)]] | None = Field(
        None, max_length=20, description="Watch notes (kind=veille) carrying every one of these tags, in any case"
    )


class SearchHit(Schema):
    id: int
    kind: str
    score: float
    title: str
    text: str


class VeilleNoteOut(Schema):
    id: int
    name: str = Field(..., alias="path")
    title: str
    date: date
    verdict_veille: str
    impact_pv: str
    summary: str
    tags: list[str]
    indexed_at: datetime
    held: bool = Field(False, description="Held for a reviewer: no block serves it until released.")
    held_reasons: list[str] = Field(default_factory=list)

    @staticmethod
    def resolve_held(note: Any) -> bool:
        return note.held_at is not None


class ClarificationsIn(Schema):
    story: str = Field(..., max_length=100, examples=["PD-295"])
    domain: str = Field(..., max_length=100, examples=["tooling"])
    project: str = Field(..., max_length=100, examples=["ia-governance"])
    answers: list[str] = Field(..., min_length=clarifications.ANSWERS, max_length=clarifications.ANSWERS)
    job: UUID | None = None
    session: UUID | None = None


class ClarificationsCreatedOut(Schema):
    story: str
    version: int
    name: str


class ClarificationsOut(Schema):
    story: str
    domain: str
    project: str
    version: int
    name: str
    date: datetime
    answers: list[str]


class ClarificationsListOut(Schema):
    items: list[ClarificationsOut]
    count: int
