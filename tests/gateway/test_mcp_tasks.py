"""An approval-gated upstream call as an MCP task (2025-11-25), against the live server: the task
is working while a reviewer decides in the inbox, then completed with the tool's result, forwarded
once; a rejection or an expiry fails it with the reason and forwards nothing. The agent's own
requests (polls, cancels, another agent's task ids) never decide anything.

JSON-RPC over plain HTTP: the SDK's client sends no task-augmented calls."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx2
import pytest
from django.test import Client
from django.utils import timezone

from agents.registry import load_manifest
from gateway.models import ToolTask, UpstreamServer
from governance.kernel.principals import SYSTEM
from governance.reviews.models import ReviewItem
from tests.support.inbox import decide_in_inbox
from tests.support.keys import issue_key
from tests.support.manifests import load, manifest_text
from tests.support.upstream import Upstream, upstream_server

pytestmark = pytest.mark.django_db(transaction=True)

SQL = "mcp__supabase__execute_sql"
COUNT = {"query": "select count(*) from pages"}
GATED = ("      rate_limit: 100", "      rate_limit: 100\n      requires_approval: true")
HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}


@pytest.fixture
def gated(live_server: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Upstream]]:
    text = manifest_text("agent.seo.vlevel")
    agent = load_manifest(text.replace(*GATED), actor=SYSTEM)[0].agent
    monkeypatch.setenv("UPSTREAM_TOKEN_SUPABASE", "upstream-secret-token")
    with upstream_server() as upstream:
        UpstreamServer.objects.create(
            name="supabase", url=upstream.url, secret_name="UPSTREAM_TOKEN_SUPABASE", internal=True
        )
        yield issue_key(agent=agent), upstream


def rpc(base: str, key: str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    answer = httpx2.post(
        f"{base}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}},
        headers={**HEADERS, "Authorization": f"Bearer {key}"},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def as_task(base: str, key: str, arguments: dict[str, Any], **task: Any) -> dict[str, Any]:
    body = rpc(base, key, "tools/call", {"name": SQL, "arguments": arguments, "task": task})
    assert "task" in body.get("result", {}), body
    return body["result"]["task"]


@pytest.fixture
def reviewing(reviewer: Any) -> Client:
    client = Client()
    client.force_login(reviewer)
    return client


def test_the_server_declares_tasks_and_the_upstream_tools_support_them(live_server, gated):
    key, _ = gated
    init = rpc(
        live_server.url,
        key,
        "initialize",
        {"protocolVersion": "2025-11-25", "capabilities": {"tasks": {}}, "clientInfo": {"name": "t", "version": "1"}},
    )
    assert init["result"]["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
    tools = {tool["name"]: tool for tool in rpc(live_server.url, key, "tools/list")["result"]["tools"]}
    assert tools[SQL]["execution"] == {"taskSupport": "optional"}
    assert "execution" not in tools["submit_job"]


def test_an_approved_call_completes_the_task_with_the_tools_result_forwarded_once(live_server, gated, reviewing):
    key, upstream = gated
    task = as_task(live_server.url, key, COUNT, ttl=600_000)
    assert task["status"] == "working"
    assert task["pollInterval"] > 0
    assert upstream.calls == []

    polled = rpc(live_server.url, key, "tasks/get", {"taskId": task["taskId"]})["result"]
    assert polled["status"] == "working"
    assert upstream.calls == []

    item = ToolTask.objects.get().review_item
    assert decide_in_inbox(reviewing, item.pk, "approve").status_code in (200, 302)

    done = rpc(live_server.url, key, "tasks/get", {"taskId": task["taskId"]})["result"]
    assert done["status"] == "completed"
    result = rpc(live_server.url, key, "tasks/result", {"taskId": task["taskId"]})["result"]
    assert result["isError"] is False
    assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task["taskId"]}
    assert upstream.calls == [("execute_sql", COUNT)]
    # Polling again never forwards again.
    rpc(live_server.url, key, "tasks/get", {"taskId": task["taskId"]})
    rpc(live_server.url, key, "tasks/result", {"taskId": task["taskId"]})
    assert len(upstream.calls) == 1
    assert ToolTask.objects.get().arguments is None


def test_a_rejected_call_fails_the_task_with_the_reason_and_forwards_nothing(live_server, gated, reviewing):
    key, upstream = gated
    task = as_task(live_server.url, key, COUNT)
    item = ToolTask.objects.get().review_item
    decide_in_inbox(reviewing, item.pk, "reject", comment="not on production")

    failed = rpc(live_server.url, key, "tasks/get", {"taskId": task["taskId"]})["result"]
    assert failed["status"] == "failed"
    assert "rejected" in failed["statusMessage"]
    result = rpc(live_server.url, key, "tasks/result", {"taskId": task["taskId"]})["result"]
    assert result["isError"] is True
    assert upstream.calls == []


def test_an_expired_approval_fails_the_task(live_server, gated):
    key, upstream = gated
    task = as_task(live_server.url, key, COUNT)
    ReviewItem.objects.filter(pk=ToolTask.objects.get().review_item_id).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    failed = rpc(live_server.url, key, "tasks/get", {"taskId": task["taskId"]})["result"]
    assert failed["status"] == "failed"
    assert "expired" in failed["statusMessage"]
    assert upstream.calls == []


def test_nothing_the_agent_sends_decides_its_task(live_server, gated, transactional_db):
    key, upstream = gated
    task = as_task(live_server.url, key, COUNT)
    for _ in range(3):
        assert rpc(live_server.url, key, "tasks/get", {"taskId": task["taskId"]})["result"]["status"] == "working"
    # The agent's own approval tool is not a decision on the task's item.
    rpc(
        live_server.url,
        key,
        "tools/call",
        {"name": "get_approval", "arguments": {"id": ToolTask.objects.get().review_item_id}},
    )
    assert rpc(live_server.url, key, "tasks/get", {"taskId": task["taskId"]})["result"]["status"] == "working"
    assert ReviewItem.objects.get().status == ReviewItem.Status.PENDING
    assert upstream.calls == []


def test_another_agents_task_is_no_task(live_server, gated, transactional_db):
    key, _ = gated
    task = as_task(live_server.url, key, COUNT)
    stranger = issue_key(agent=load("agent.seo.architect"))
    for method in ("tasks/get", "tasks/result", "tasks/cancel"):
        error = rpc(live_server.url, stranger, method, {"taskId": task["taskId"]})["error"]
        assert error["code"] == -32602
        assert "No task" in error["message"]
    assert rpc(live_server.url, stranger, "tasks/list")["result"]["tasks"] == []
    assert rpc(live_server.url, key, "tasks/list")["result"]["tasks"][0]["taskId"] == task["taskId"]
    assert rpc(live_server.url, key, "tasks/get", {"taskId": "not-a-uuid"})["error"]["code"] == -32602


def test_a_cancelled_task_is_never_forwarded_even_once_approved(live_server, gated, reviewing):
    key, upstream = gated
    task = as_task(live_server.url, key, COUNT)
    cancelled = rpc(live_server.url, key, "tasks/cancel", {"taskId": task["taskId"]})["result"]
    assert cancelled["status"] == "cancelled"
    decide_in_inbox(reviewing, ToolTask.objects.get().review_item_id, "approve")
    assert rpc(live_server.url, key, "tasks/get", {"taskId": task["taskId"]})["result"]["status"] == "cancelled"
    assert upstream.calls == []
    assert rpc(live_server.url, key, "tasks/cancel", {"taskId": task["taskId"]})["error"]["code"] == -32602


def test_a_platform_tool_does_not_run_as_a_task_and_bad_task_params_are_refused(live_server, gated):
    key, upstream = gated
    error = rpc(live_server.url, key, "tools/call", {"name": "get_approval", "arguments": {"id": 1}, "task": {}})
    assert error["error"]["code"] == -32601
    bad = rpc(live_server.url, key, "tools/call", {"name": SQL, "arguments": COUNT, "task": {"ttl": "soon"}})
    assert bad["error"]["code"] == -32602
    assert not ToolTask.objects.exists()
    assert upstream.calls == []


def test_without_a_task_the_call_still_answers_pending_approval(live_server, gated):
    key, upstream = gated
    body = rpc(live_server.url, key, "tools/call", {"name": SQL, "arguments": COUNT})
    assert body["result"]["isError"] is True
    assert '"refusal": "PendingApproval"' in body["result"]["content"][0]["text"]
    assert not ToolTask.objects.exists()
    assert upstream.calls == []
