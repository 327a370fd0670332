from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema
from pydantic import ValidationInfo, field_validator


class DecisionIn(Schema):
    decision: Literal["approve", "reject", "answer"]
    comment: str = Field("", max_length=10_000)
    response: str | None = Field(
        None,
        max_length=2000,
        validate_default=True,
        description='With "decision": "answer" only: one of the MultipleChoice question\'s options.',
    )
    payloadHash: str | None = Field(
        None,
        min_length=64,
        max_length=64,
        description="The item's payloadHash as you read it: the decision is refused (409) if the item changed since.",
    )
    arguments: dict[str, Any] | None = Field(
        None,
        description='With "decision": "approve" of a tool call only: the arguments to approve instead of those '
        "asked for, checked against the tool's input schema when one is known (422 at the failing path). The call "
        "allowed is then this one, bound to these arguments' hash, and the agent is told what changed.",
    )

    @field_validator("arguments")
    @classmethod
    def _arguments_go_with_approve(cls, value: dict[str, Any] | None, info: ValidationInfo) -> dict[str, Any] | None:
        """Edited arguments are approved or nothing: with a rejection they would be silently lost."""
        if value is not None and info.data.get("decision") != "approve":
            raise ValueError('edited "arguments" go with "decision": "approve" only')
        return value

    @field_validator("response")
    @classmethod
    def _response_goes_with_answer(cls, value: str | None, info: ValidationInfo) -> str | None:
        """An answer needs its response, and nothing else takes one (so it cannot be lost)."""
        answering = info.data.get("decision") == "answer"
        if answering and value is None:
            raise ValueError('"decision": "answer" needs the chosen option as "response"')
        if not answering and value is not None:
            raise ValueError('a "response" goes with "decision": "answer" only')
        return value


class BulkDecisionIn(Schema):
    ids: list[int] = Field(
        ..., min_length=1, max_length=1000, description="The review items to decide, each on its own."
    )
    decision: Literal["approve", "reject"]
    comment: str = Field("", max_length=10_000)


class BulkResultOut(Schema):
    id: int
    status: Literal["decided", "conflict", "forbidden", "not_found"] = Field(
        ..., description="conflict: decided meanwhile, or past its deadline (expired)."
    )


class BulkDecisionOut(Schema):
    results: list[BulkResultOut]


class DecisionOut(Schema):
    item: int = Field(..., alias="item_id")
    decision: str
    comment: str
    decidedBy: str = Field(..., alias="decided_by")
    keyMintedBy: str = Field(
        ..., alias="minted_by", description="Who minted the decider's key for them, when someone else did; else empty."
    )
    decidedAt: datetime = Field(..., alias="decided_at")
    payloadHash: str = Field(..., alias="payload_hash")
    amended: dict[str, Any] | None = Field(
        None, description="The payload approved instead of the item's, when the reviewer edited the arguments."
    )
    amendedHash: str = Field(
        "", alias="amended_hash", description="SHA-256 of `amended`, which the approval is bound to; else empty."
    )
    status: str = Field(..., alias="item.status")


class ReviewItemOut(Schema):
    id: int
    kind: str
    title: str
    status: str
    agent: str | None = Field(None, alias="agent.agent_id")
    payload: dict[str, Any]
    payloadHash: str = Field(..., alias="content_hash", description="What a decision binds to (send it back).")
    createdAt: datetime = Field(..., alias="created_at")
    expiresAt: datetime | None = Field(None, alias="expires_at")
