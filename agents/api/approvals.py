"""Approvals router (/api/v1/approvals): the REST twin of MCP ``request_approval`` and
``get_approval`` (agents/approvals.py), for agents that do not speak MCP."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router, Status

from agents import approvals
from agents.schemas import ApprovalIn, ApprovalOut
from governance.kernel.auth import agent_key, caller
from governance.reviews.models import ReviewItem

router = Router(tags=["approvals"], auth=agent_key)


def _out(item: ReviewItem) -> dict[str, Any]:
    """An approval is its review item: both ids are the item's."""
    return {**approvals.describe(item), "approvalId": item.pk, "reviewItemId": item.pk}


@router.post("", operation_id="request_approval", response={202: ApprovalOut})
def request_approval(request: HttpRequest, data: ApprovalIn) -> Status:
    """Ask a reviewer to approve `action`, bound to the hash of `arguments`: 202 at once (nothing
    waits), then poll `GET /approvals/{id}`; 429 with Retry-After past the agent's pending limit."""
    item = approvals.request_approval(
        actor=caller(request), title=data.action, details=data.reason, payload=data.arguments
    )
    return Status(202, _out(item))


@router.get("/{approval_id}", operation_id="get_approval", response=ApprovalOut)
def get_approval(request: HttpRequest, approval_id: int) -> dict[str, Any]:
    """One of the calling agent's approval requests (another agent's: 404), `expired` once its
    deadline passed undecided."""
    return _out(approvals.approval(caller(request), approval_id))
