"""What the adversarial suite's ``world`` fixture gives a test: one fleet as an attacker finds it."""

from __future__ import annotations

from dataclasses import dataclass

from tests.support.api import Api


@dataclass
class World:
    """One fleet as an attacker finds it: two agents with manifests, one's job, session, review
    item and automation, and a subject's memory."""

    owner: Api
    other: Api
    outsider: Api
    reviewer: Api
    revoked: Api
    anonymous: Api
    job_id: str
    session_id: str
    review_item_id: int
    automation_id: int
