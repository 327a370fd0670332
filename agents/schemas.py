from __future__ import annotations

from datetime import datetime

from ninja import Field, Schema

from agents.models import AGENT_ID_PATTERN


class AgentIn(Schema):
    agent_id: str = Field(..., pattern=AGENT_ID_PATTERN, max_length=128, examples=["agent.seo.vlevel"])
    name: str = Field("", max_length=200)


class AgentOut(Schema):
    agent_id: str
    name: str
    created_at: datetime
