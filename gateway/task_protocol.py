"""MCP tasks (2025-11-25) at /mcp: the protocol side of gateway/mcp_tasks.py.

A client that declares tasks may send an upstream ``tools/call`` with ``task``: it gets a
``CreateTaskResult`` at once, and polls ``tasks/get`` (or waits on ``tasks/result``) while a
reviewer decides an approval-gated call. The SDK serves no tasks itself, so this is a server
middleware (the capability in ``initialize``, ``execution.taskSupport`` on upstream tools in
``tools/list``, the task-augmented ``tools/call``) and four request handlers. The 2026-07-28
revision moved tasks out of the core protocol; there, and for any client that does not ask for a
task, an approval-gated call still answers ``PendingApproval`` at once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types
from asgiref.sync import sync_to_async
from django.conf import settings
from mcp.server import Server
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND
from pydantic import BaseModel, ConfigDict, Field

from gateway import forwarding, mcp_tasks
from gateway.models import ToolTask
from governance.kernel.exceptions import NotFound
from governance.kernel.principals import Principal

logger = logging.getLogger(__name__)

VERSION = "2025-11-25"
CAPABILITY: dict[str, Any] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
RELATED = "io.modelcontextprotocol/related-task"
# A governed upstream call: the answer, or forwarding.Refused before anything was forwarded.
Governed = Callable[[Principal, str, dict[str, Any], dict[str, Any]], Awaitable[types.CallToolResult]]
Refusal = Callable[[str, str, dict[str, Any]], types.CallToolResult]


class TaskParams(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="allow")

    task_id: str = Field(alias="taskId", max_length=64)


class ListParams(BaseModel):
    model_config = ConfigDict(extra="allow")

    cursor: str | None = None


def _dump(result: types.CallToolResult) -> dict[str, Any]:
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


class Tasks:
    """The middleware and the handlers, around one governed-call function of the server."""

    def __init__(self, governed: Governed, refusal: Refusal, principal: Callable[[], Principal]) -> None:
        self.governed, self.refusal, self.principal = governed, refusal, principal

    async def _outcome(
        self, principal: Principal, name: str, arguments: dict[str, Any], meta: dict[str, Any]
    ) -> types.CallToolResult | forwarding.Refused:
        try:
            return await self.governed(principal, name, arguments, meta)
        except forwarding.Refused as refused:
            return refused

    # -- the middleware ----------------------------------------------------------------------------

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if (
            ctx.method == "tools/call"
            and ctx.protocol_version == VERSION
            and (ctx.params or {}).get("task") is not None
        ):
            return await self._call_as_task(dict(ctx.params or {}))
        result = await call_next(ctx)
        if not isinstance(result, dict):
            return result
        if ctx.method == "initialize" and result.get("protocolVersion") == VERSION:
            result.setdefault("capabilities", {})["tasks"] = CAPABILITY
        elif ctx.method == "tools/list" and ctx.protocol_version == VERSION:
            for tool in result.get("tools", []):
                if forwarding.split(str(tool.get("name", ""))) is not None:
                    tool["execution"] = {"taskSupport": "optional"}
        return result

    async def _call_as_task(self, params: dict[str, Any]) -> dict[str, Any]:
        name, arguments, task = params.get("name"), params.get("arguments") or {}, params.get("task")
        meta = params.get("_meta") or {}
        ttl = task.get("ttl") if isinstance(task, dict) else None
        if not isinstance(name, str) or not isinstance(arguments, dict) or not isinstance(meta, dict):
            raise MCPError(code=INVALID_PARAMS, message="tools/call needs a name and object arguments.")
        if ttl is not None and (not isinstance(ttl, int) or isinstance(ttl, bool) or ttl < 0):
            raise MCPError(code=INVALID_PARAMS, message="task.ttl is a number of milliseconds.")
        if forwarding.split(name) is None:
            # Platform tools answer at once; only upstream tools (which may wait for a reviewer) run as tasks.
            raise MCPError(code=METHOD_NOT_FOUND, message=f"{name} does not support task-augmented execution.")
        principal = self.principal()
        outcome = await self._outcome(principal, name, arguments, meta)
        if isinstance(outcome, forwarding.Refused) and outcome.refusal == "PendingApproval":
            opened = await sync_to_async(mcp_tasks.open_task)(
                principal, name, arguments, meta, requested_ttl=ttl, review_item_id=outcome.extra.get("reviewItemId")
            )
        else:
            result = outcome if isinstance(outcome, types.CallToolResult) else self._refused(outcome)
            opened = await sync_to_async(mcp_tasks.open_task)(
                principal, name, arguments, meta, requested_ttl=ttl, result=_dump(result)
            )
        return {"task": mcp_tasks.wire(opened)}

    def _refused(self, refused: forwarding.Refused) -> types.CallToolResult:
        return self.refusal(refused.message, refused.refusal, refused.extra)

    # -- the handlers ------------------------------------------------------------------------------

    async def _advance(self, task_id: str) -> ToolTask:
        """The task after this poll: an approved call is forwarded here, once."""
        principal = self.principal()
        try:
            state = await sync_to_async(mcp_tasks.poll)(principal, task_id)
        except NotFound as exc:
            raise MCPError(code=INVALID_PARAMS, message=exc.detail) from exc
        if isinstance(state, ToolTask):
            return state
        try:
            outcome = await self._outcome(principal, state.task.tool_id, state.arguments, state.task.meta)
        except Exception:
            # The claim is spent either way: the task ends with the failure rather than working forever.
            logger.exception("[mcp] task %s: the approved call failed", state.task.pk)
            outcome = forwarding.Refused("The call failed on the server; it was logged.", "ServerError")
        result = outcome if isinstance(outcome, types.CallToolResult) else self._refused(outcome)
        return await sync_to_async(mcp_tasks.complete)(state.task, _dump(result))

    async def get(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> dict[str, Any]:
        return mcp_tasks.wire(await self._advance(params.task_id))

    async def result(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> dict[str, Any]:
        """The call's result once the task has ended; while a reviewer decides, this waits up to
        MCP_TASK_RESULT_WAIT_SECONDS (a request cannot hold a web thread for hours), then says the
        task is still working."""
        deadline = time.monotonic() + settings.MCP_TASK_RESULT_WAIT_SECONDS
        task = await self._advance(params.task_id)
        while task.status == ToolTask.Status.WORKING and time.monotonic() < deadline:
            await anyio.sleep(mcp_tasks.POLL_INTERVAL_MS / 1000)
            task = await self._advance(params.task_id)
        if task.status == ToolTask.Status.WORKING:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"Task {task.pk} is still waiting for a reviewer; poll tasks/get.",
                data={"taskId": str(task.pk), "status": task.status},
            )
        related = {RELATED: {"taskId": str(task.pk)}}
        if task.status == ToolTask.Status.COMPLETED and task.result is not None:
            return {**task.result, "_meta": {**(task.result.get("_meta") or {}), **related}}
        body = _dump(self.refusal(task.status_message, task.status.capitalize(), {}))
        return {**body, "_meta": related}

    async def list(self, ctx: ServerRequestContext[Any, Any], params: ListParams) -> dict[str, Any]:
        tasks = await sync_to_async(mcp_tasks.listing)(self.principal())
        return {"tasks": [mcp_tasks.wire(task) for task in tasks]}

    async def cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> dict[str, Any]:
        try:
            task = await sync_to_async(mcp_tasks.cancel)(self.principal(), params.task_id)
        except NotFound as exc:
            raise MCPError(code=INVALID_PARAMS, message=exc.detail) from exc
        except mcp_tasks.InvalidTaskState as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from exc
        return mcp_tasks.wire(task)


def install(server: Server[Any], tasks: Tasks) -> None:
    server.middleware.append(tasks)
    server.add_request_handler("tasks/get", TaskParams, tasks.get)
    server.add_request_handler("tasks/result", TaskParams, tasks.result)
    server.add_request_handler("tasks/list", ListParams, tasks.list)
    server.add_request_handler("tasks/cancel", TaskParams, tasks.cancel)
