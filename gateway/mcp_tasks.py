"""Approval-gated upstream calls as MCP tasks (2025-11-25): the agent's call becomes a task that is
``working`` while a reviewer decides, then ``completed`` with the tool's result, or ``failed``.

Nothing waits in a process: the task is a row, and the agent's polls move it. A poll that finds
the approval granted claims the call (``started_at``, under a row lock, so two polls forward it
once) and the caller forwards it through the same governed path as any call (the approval is
bound to the arguments' hash and spent by that call); a rejected or expired approval fails the
task with the reason and forwards nothing. The decision only ever comes from the reviewer's
inbox: nothing the agent sends (a poll, a cancel, the task's arguments) can approve it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from gateway.models import ToolTask
from governance.kernel import retention
from governance.kernel.exceptions import NotFound
from governance.kernel.principals import Principal
from governance.reviews.models import ReviewItem

POLL_INTERVAL_MS = 2000
Status = ToolTask.Status
TERMINAL = frozenset({Status.COMPLETED, Status.FAILED, Status.CANCELLED})


def ttl_ms(requested: int | None) -> int:
    """The task's retention: what the client asked for, within [1 minute, MCP_TASK_TTL_HOURS]."""
    ceiling = settings.MCP_TASK_TTL_HOURS * 3600 * 1000
    return ceiling if requested is None else max(60_000, min(int(requested), ceiling))


def wire(task: ToolTask) -> dict[str, Any]:
    """The task as MCP 2025-11-25 sends it."""
    body: dict[str, Any] = {
        "taskId": str(task.pk),
        "status": task.status,
        "createdAt": task.created_at.isoformat().replace("+00:00", "Z"),
        "lastUpdatedAt": task.updated_at.isoformat().replace("+00:00", "Z"),
        "ttl": task.ttl_ms,
    }
    if task.status_message:
        body["statusMessage"] = task.status_message
    if task.status == Status.WORKING:
        body["pollInterval"] = POLL_INTERVAL_MS
    return body


@transaction.atomic(durable=True)
def open_task(
    principal: Principal,
    tool_id: str,
    arguments: dict[str, Any],
    meta: dict[str, Any],
    *,
    requested_ttl: int | None,
    review_item_id: int | None = None,
    result: dict[str, Any] | None = None,
) -> ToolTask:
    """A new task: waiting on ``review_item_id``, or already completed with ``result`` (a call
    that needed no approval is answered as a task all the same, since the client asked for one)."""
    assert principal.agent is not None
    waiting = result is None
    return ToolTask.objects.create(
        agent=principal.agent,
        tool_id=tool_id,
        arguments=arguments if waiting else None,
        meta={key: meta[key] for key in ("jobId", "sessionId") if meta.get(key) is not None},
        review_item_id=review_item_id,
        status=Status.WORKING if waiting else Status.COMPLETED,
        status_message="Waiting for a reviewer's decision in the inbox." if waiting else "",
        result=result,
        ttl_ms=ttl_ms(requested_ttl),
    )


def _own(principal: Principal, task_id: str) -> ToolTask:
    """The caller's own live task; another agent's, an expired one or none at all are the same 404."""
    try:
        UUID(task_id)
    except (ValueError, TypeError):
        raise NotFound(f"No task {task_id!r}.") from None
    if principal.agent is None:
        raise NotFound(f"No task {task_id!r}.")
    task = ToolTask.objects.filter(pk=task_id, agent=principal.agent).first()
    if task is None or task.created_at + timedelta(milliseconds=task.ttl_ms) < timezone.now():
        raise NotFound(f"No task {task_id!r}.")
    return task


def _decision(item: ReviewItem | None) -> str:
    """approved, rejected, expired or pending: the reviewer's word, an expiry counted as it falls due."""
    if item is None:
        return "rejected"
    if item.status == ReviewItem.Status.PENDING and item.expires_at is not None and item.expires_at <= timezone.now():
        return "expired"
    return item.status


@dataclass(frozen=True)
class Claimed:
    """The approved call this poll is to forward, once."""

    task: ToolTask
    arguments: dict[str, Any]


@transaction.atomic(durable=True)
def poll(principal: Principal, task_id: str) -> ToolTask | Claimed:
    """The task as it stands, moved by the reviewer's decision: failed when rejected or expired,
    claimed for forwarding when approved (the caller forwards it and calls ``complete``)."""
    task = _own(principal, task_id)
    if task.status != Status.WORKING or task.started_at is not None:
        return task
    task = ToolTask.objects.select_for_update(of=("self",)).select_related("review_item").get(pk=task.pk)
    if task.status != Status.WORKING or task.started_at is not None:
        return task
    decision = _decision(task.review_item)
    if decision == "pending":
        return task
    if decision != "approved":
        task.status = Status.FAILED
        task.status_message = f"The reviewer's approval was not given: the request {decision}. Nothing was forwarded."
        task.arguments = None
        task.save(update_fields=["status", "status_message", "arguments", "updated_at"])
        return task
    task.started_at = timezone.now()
    task.status_message = "Approved; forwarding the call."
    task.save(update_fields=["started_at", "status_message", "updated_at"])
    return Claimed(task, dict(task.arguments or {}))


@transaction.atomic(durable=True)
def complete(task: ToolTask, result: dict[str, Any]) -> ToolTask:
    """The forwarded call's answer: the task is completed with it, whatever it says (a tool error
    is a result too); the arguments are no longer kept."""
    ToolTask.objects.filter(pk=task.pk).update(
        status=Status.COMPLETED, result=result, arguments=None, status_message="", updated_at=timezone.now()
    )
    task.refresh_from_db()
    return task


@transaction.atomic(durable=True)
def cancel(principal: Principal, task_id: str) -> ToolTask:
    """Cancel a working task (the reviewer's item stays: a later identical call may use its
    decision). A task already ended, or whose call is on its way, cannot be cancelled."""
    task = ToolTask.objects.select_for_update().get(pk=_own(principal, task_id).pk)
    if task.status in TERMINAL or task.started_at is not None:
        raise InvalidTaskState(f"Task {task_id} is {task.status} and cannot be cancelled.")
    task.status, task.status_message, task.arguments = Status.CANCELLED, "Cancelled by the agent.", None
    task.save(update_fields=["status", "status_message", "arguments", "updated_at"])
    return task


def listing(principal: Principal, limit: int = 100) -> list[ToolTask]:
    """The caller's live tasks, newest first."""
    if principal.agent is None:
        return []
    now = timezone.now()
    tasks = ToolTask.objects.filter(agent=principal.agent)[: limit * 2]
    return [task for task in tasks if task.created_at + timedelta(milliseconds=task.ttl_ms) >= now][:limit]


def result_of(principal: Principal, task_id: str) -> ToolTask:
    return _own(principal, task_id)


class InvalidTaskState(Exception):
    """A cancel of a task that has ended."""


def _tasks_with_arguments(cutoff: datetime) -> QuerySet[ToolTask]:
    return ToolTask.objects.filter(arguments__isnull=False, created_at__lt=cutoff)


# Archived with the gateway calls' arguments: a task nobody polled to its end keeps the call's
# arguments until then; it ends failed, so no later poll can forward what is no longer kept.
ARGUMENTS_RETENTION = retention.Policy(
    name="tool task arguments",
    action=retention.ARCHIVE,
    candidates=_tasks_with_arguments,
    archived={
        "arguments": None,
        "status": Status.FAILED,
        "status_message": "Expired: it was never polled to its end, and its arguments are no longer kept.",
    },
)
