from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema


class DecisionIn(Schema):
    decision: Literal["approve", "reject"]
    comment: str = Field("", max_length=10_000)


class DecisionOut(Schema):
    item: int = Field(..., alias="item_id")
    decision: str
    comment: str
    decidedBy: str = Field(..., alias="decided_by")
    decidedAt: datetime = Field(..., alias="decided_at")
    payloadHash: str = Field(..., alias="payload_hash")
    status: str = Field(..., alias="item.status")


class ReviewItemOut(Schema):
    id: int
    kind: str
    title: str
    status: str
    agent: str | None = Field(None, alias="agent.agent_id")
    payload: dict[str, Any]
    createdAt: datetime = Field(..., alias="created_at")
    expiresAt: datetime | None = Field(None, alias="expires_at")
