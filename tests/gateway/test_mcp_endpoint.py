"""/mcp with the SDK's own client over real HTTP (Django's live server): agents work through MCP
tools that run the REST API's services."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client.session import ClientSession

from agents.models import Job
from governance.kernel.principals import SYSTEM
from tests.support.inbox import decide_in_inbox
from tests.support.keys import issue_key
from tests.support.manifests import load
from tests.support.mcp import connected, mcp_session

pytestmark = pytest.mark.django_db(transaction=True)

ENVELOPE = {
    "intent": "seo_audit",
    "scope": {"entityType": "page", "entityIds": ["p1"]},
    "payload": {"urls": ["https://example.com/a"], "depth": 1},
    "context": {"source": "manual"},
}


@pytest.fixture
def vlevel_key(transactional_db) -> str:
    return issue_key(agent=load("agent.seo.vlevel"))


def test_an_agent_lists_the_platform_tools_with_their_schemas(live_server, vlevel_key):
    async def work(session: ClientSession) -> Any:
        return await session.list_tools()

    tools = {tool.name: tool for tool in mcp_session(live_server.url, vlevel_key, work).tools}

    assert {"submit_job", "lease_job", "update_job_state", "submit_job_result", "get_injection_block"} <= set(tools)
    assert "intent" in tools["submit_job"].input_schema["properties"]
    assert tools["get_injection_block"].annotations.read_only_hint is True


def test_a_job_submitted_over_mcp_is_the_same_job_as_over_rest(live_server, vlevel_key):
    async def work(session: ClientSession) -> Any:
        first = await session.call_tool("submit_job", ENVELOPE)
        again = await session.call_tool("submit_job", ENVELOPE)
        return first, again

    first, again = mcp_session(live_server.url, vlevel_key, work)

    assert not first.is_error, first.content
    assert first.structured_content["created"] is True
    assert again.structured_content["created"] is False  # the idempotency key of the REST path
    assert again.structured_content["jobId"] == first.structured_content["jobId"]
    job = Job.objects.get(job_id=first.structured_content["jobId"])
    assert job.agent.agent_id == "agent.seo.vlevel"


def test_a_refusal_is_a_tool_error_naming_the_field(live_server, vlevel_key):
    async def work(session: ClientSession) -> Any:
        return await session.call_tool("submit_job", {**ENVELOPE, "intent": 42})

    result = mcp_session(live_server.url, vlevel_key, work)

    assert result.is_error
    body = json.loads(result.content[0].text)
    assert any(error["loc"][0] == "intent" for error in body["errors"])
    assert Job.objects.count() == 0


def test_no_key_is_a_401_before_the_protocol(live_server):
    response = httpx2.post(f"{live_server.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})

    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


def test_a_foreign_origin_is_refused_before_any_tool_runs(live_server, vlevel_key):
    """DNS rebinding: a page on another site cannot drive a local control plane through a browser."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "submit_job", "arguments": ENVELOPE}}
    headers = {
        "Authorization": f"Bearer {vlevel_key}",
        "Origin": "http://evil.example",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }
    response = httpx2.post(f"{live_server.url}/mcp", json=body, headers=headers)

    assert response.status_code in (400, 403)
    assert Job.objects.count() == 0


def test_a_foreign_host_header_is_refused(live_server, vlevel_key):
    headers = {"Authorization": f"Bearer {vlevel_key}", "Host": "evil.example"}
    response = httpx2.post(
        f"{live_server.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=headers
    )

    assert response.status_code == 400


def test_an_operator_key_gets_no_agent_tool(live_server, admin_operator):
    key = issue_key(user=admin_operator)

    async def work(session: ClientSession) -> Any:
        listed = await session.list_tools()
        called = await session.call_tool("submit_job", ENVELOPE)
        return listed, called

    listed, called = mcp_session(live_server.url, key, work)

    assert "submit_job" not in {tool.name for tool in listed.tools}
    assert called.is_error
    assert Job.objects.count() == 0


def test_an_agent_cannot_drive_another_agents_job(live_server, vlevel_key):
    other = issue_key(agent=load("agent.seo.architect"))

    async def submit(session: ClientSession) -> Any:
        return await session.call_tool("submit_job", ENVELOPE)

    job_id = mcp_session(live_server.url, vlevel_key, submit).structured_content["jobId"]

    async def lease(session: ClientSession) -> Any:
        return await session.call_tool("lease_job", {"jobId": job_id})

    result = mcp_session(live_server.url, other, lease)

    assert result.is_error
    assert json.loads(result.content[0].text)["refusal"] == "Forbidden"
    assert Job.objects.get(job_id=job_id).lease_owner in (None, "")


def test_a_job_runs_to_its_result_over_mcp(live_server, vlevel_key):
    async def work(session: ClientSession) -> Any:
        job = (await session.call_tool("submit_job", ENVELOPE)).structured_content
        leased = await session.call_tool("lease_job", {"jobId": job["jobId"], "owner": "worker-1"})
        state = await session.call_tool(
            "update_job_state",
            {"jobId": job["jobId"], "leaseOwner": "worker-1", "update": {"currentNode": "crawl"}},
        )
        return job, leased, state

    _, leased, state = mcp_session(live_server.url, vlevel_key, work)

    assert not leased.is_error, leased.content
    assert leased.structured_content["lease"]["owner"] == "worker-1"
    assert not state.is_error, state.content
    assert state.structured_content["graphState"]["currentNode"] == "crawl"


class Alternating(httpx2.AsyncBaseTransport):
    """Sends each request of one client to the next of several servers in turn."""

    def __init__(self, bases: list[str]) -> None:
        self.ports = [httpx2.URL(base).port or 80 for base in bases]
        self.served_by: list[int] = []
        self.inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        port = self.ports[len(self.served_by) % len(self.ports)]
        self.served_by.append(port)
        request.url = request.url.copy_with(port=port)
        return await self.inner.handle_async_request(request)


@pytest.mark.process
def test_two_web_processes_serve_one_clients_consecutive_requests(tmp_path, vlevel_key):
    """Nothing of an MCP session lives in one process: initialize on one server, then list and
    call on the other, alternately, as a load balancer may do."""
    from tests.support.processes import gunicorn

    with gunicorn(tmp_path / "a", workers=1, threads=2) as a, gunicorn(tmp_path / "b", workers=1, threads=2) as b:
        transport = Alternating([a, b])

        async def main() -> Any:
            headers = {"Authorization": f"Bearer {vlevel_key}"}
            async with (
                httpx2.AsyncClient(headers=headers, transport=transport, timeout=60) as http,
                connected(a, http) as session,
            ):
                tools = await session.list_tools()
                first = await session.call_tool("submit_job", ENVELOPE)
                again = await session.call_tool("submit_job", ENVELOPE)
                return tools, first, again

        tools, first, again = anyio.run(main)

    assert len(set(transport.served_by)) == 2
    assert "submit_job" in {tool.name for tool in tools.tools}
    assert first.structured_content["created"] is True
    assert again.structured_content["jobId"] == first.structured_content["jobId"]


def test_the_injection_block_over_mcp_is_the_step_zero_block(live_server, vlevel_key):
    arguments = {"story": "S-1", "domain": "seo", "project": "site", "query_text": "canonical tags"}

    async def work(session: ClientSession) -> Any:
        return await session.call_tool("get_injection_block", arguments)

    result = mcp_session(live_server.url, vlevel_key, work)

    assert not result.is_error, result.content
    assert "_aucun résultat_" in result.structured_content["markdown"]


def test_an_output_validated_over_mcp_is_checked_and_stored_like_over_rest(live_server, vlevel_key):
    from governance.contracts import services as contracts
    from governance.contracts.models import ContractCheck
    from governance.kernel.principals import SYSTEM

    contracts.import_catalog(contracts.CATALOG.read_text(encoding="utf-8"), actor=SYSTEM)
    bad = {"rankings": [{"id": 3, "rank": "first"}]}

    async def work(session: ClientSession) -> Any:
        return await session.call_tool("validate_output", {"contract": "memory_retrieval_ranking", "output": bad})

    result = mcp_session(live_server.url, vlevel_key, work)

    assert not result.is_error, result.content
    report = result.structured_content
    assert report["compliant"] is False
    assert any(v["path"].startswith("rankings[0]") for v in report["violations"])
    stored = ContractCheck.objects.get(pk=report["reportId"])
    assert stored.agent.agent_id == "agent.seo.vlevel"


def test_a_nan_in_an_output_over_mcp_is_a_stored_violation_and_elsewhere_still_refused(vlevel):
    """As over REST: a non-JSON number in the output under audit is a not_serializable violation the
    compliance figures count; in any other argument it is still refused before anything runs. (The
    SDK's client writes NaN as null, so the tool call is made as the server receives a raw NaN.)"""
    from gateway.server import _call
    from governance.contracts import services as contracts
    from governance.contracts.models import ContractCheck
    from governance.kernel.principals import SYSTEM, Principal

    contracts.import_catalog(contracts.CATALOG.read_text(encoding="utf-8"), actor=SYSTEM)
    caller = Principal(agent=vlevel)
    output = {"rankings": [{"id": 3, "score": float("nan")}]}

    audited = _call(caller, "validate_output", {"contract": "memory_retrieval_ranking", "output": output})
    elsewhere = _call(
        caller, "validate_output", {"contract": "memory_retrieval_ranking", "output": {}, "known_ids": [float("inf")]}
    )

    assert not audited.is_error, audited.content
    report = audited.structured_content
    assert report["compliant"] is False
    assert [v["code"] for v in report["violations"]] == ["not_serializable"]
    assert elsewhere.is_error
    assert ContractCheck.objects.count() == 1
    assert ContractCheck.objects.get().compliant is False


def test_clarifications_and_gate_results_over_mcp_go_through_their_services(live_server, vlevel_key):
    from agents.models import Agent
    from memory.models import Clarification, GateResult
    from tests.factories.sessions import AISessionFactory

    AISessionFactory(agent=Agent.objects.get(agent_id="agent.seo.vlevel"), story="PD-1")  # its work on PD-1
    answers = ["Keep it.", "No.", "Monthly.", "The SEO lead."]

    async def work(session: ClientSession) -> Any:
        stored = await session.call_tool(
            "add_clarification", {"story": "PD-1", "domain": "seo", "project": "site", "answers": answers}
        )
        gate = await session.call_tool("record_gate_result", {"story": "PD-1", "gate": 2, "verdict": "GO"})
        return stored, gate

    stored, gate = mcp_session(live_server.url, vlevel_key, work)

    assert stored.structured_content["version"] == 1, stored.content
    stored_answers = Clarification.objects.filter(story="PD-1").order_by("question_idx")
    assert [c.verbatim for c in stored_answers] == answers
    assert gate.structured_content["verdict"] == "GO"
    assert GateResult.objects.filter(story="PD-1", gate=2).count() == 1


def test_memory_search_over_mcp_ranks_by_meaning_with_the_real_model(live_server, vlevel_key):
    from memory import indexing, learnings
    from memory.embeddings import get_backend

    texts = (
        "Adding a column with a default rewrites the table and locks it during the migration.",
        "Button colours must follow the design system palette.",
    )
    rows = [
        learnings.create_learning(actor=SYSTEM, story="S-9", gate=1, domain="seo", project="site", tags=[], text=text)
        for text in texts
    ]
    indexing.embed("learning", [row.pk for row in rows], backend=get_backend("local"))

    async def work(session: ClientSession) -> Any:
        return await session.call_tool("search_memory", {"q": "schema change blocks writes on a big table", "k": 2})

    result = mcp_session(live_server.url, vlevel_key, work)

    assert not result.is_error, result.content
    hits = result.structured_content["hits"]
    assert [hit["text"] for hit in hits] == list(texts)
    assert hits[0]["score"] > hits[1]["score"]


def test_an_emotion_recorded_over_mcp_goes_through_the_subject_service(live_server, vlevel_key, admin_operator):
    from memory.models import EmotionEvent, Subject

    Subject.objects.create(key="alice")
    arguments = {"subject": "alice", "emotion": "joie", "intensity": 0.5, "triggered_by": "user_message"}

    async def work(session: ClientSession) -> Any:
        return await session.call_tool("record_emotion", arguments)

    result = mcp_session(live_server.url, vlevel_key, work)
    refused = mcp_session(live_server.url, issue_key(user=admin_operator), work)

    assert not result.is_error, result.content
    assert result.structured_content["emotion"] == "joie"
    assert refused.is_error  # an operator key has no agent tool
    assert list(EmotionEvent.objects.values_list("subject__key", "emotion")) == [("alice", "joie")]


def test_an_approval_asked_over_mcp_is_decided_in_the_inbox_and_read_back(live_server, vlevel_key, reviewer, client):
    from governance.reviews.models import ReviewItem

    async def ask(session: ClientSession) -> Any:
        return await session.call_tool(
            "request_approval", {"title": "Publish the audit", "details": "12 pages", "payload": {"pages": 12}}
        )

    asked = mcp_session(live_server.url, vlevel_key, ask).structured_content
    assert asked["status"] == "pending"
    item = ReviewItem.objects.get(pk=asked["id"])
    assert item.agent.agent_id == "agent.seo.vlevel"

    client.force_login(reviewer)
    response = decide_in_inbox(client, item.pk, "approve", comment="Go.")
    assert response.status_code in (200, 302)

    async def poll(session: ClientSession) -> Any:
        return await session.call_tool("get_approval", {"id": asked["id"]})

    read = mcp_session(live_server.url, vlevel_key, poll).structured_content
    assert read["status"] == "approved"
    assert read["decision"]["decidedBy"] == f"user:{reviewer.get_username()}"
    assert read["payloadHash"] == item.payload["payloadHash"]


def test_another_agent_cannot_read_an_approval_and_a_flood_is_refused(live_server, vlevel_key, settings):
    from governance.reviews.models import ReviewItem

    settings.AGENT_MAX_PENDING_APPROVALS = 2
    other = issue_key(agent=load("agent.seo.architect"))

    async def ask_three(session: ClientSession) -> Any:
        return [await session.call_tool("request_approval", {"title": f"step {n}"}) for n in range(3)]

    results = mcp_session(live_server.url, vlevel_key, ask_three)
    first_id = results[0].structured_content["id"]

    async def peek(session: ClientSession) -> Any:
        return await session.call_tool("get_approval", {"id": first_id})

    peeked = mcp_session(live_server.url, other, peek)

    assert [r.is_error for r in results] == [False, False, True]
    assert json.loads(results[2].content[0].text)["refusal"] == "RateLimited"
    assert ReviewItem.objects.filter(kind="agent.approval").count() == 2
    assert peeked.is_error
    assert json.loads(peeked.content[0].text)["refusal"] == "NotFound"


def test_the_manifest_and_the_injection_block_are_resources(live_server, vlevel_key):
    async def work(session: ClientSession) -> Any:
        listed = await session.list_resources()
        templates = await session.list_resource_templates()
        manifest = await session.read_resource("governance://manifest")
        block = await session.read_resource("governance://injection-block/seo/site/S-1")
        return listed, templates, manifest, block

    listed, templates, manifest, block = mcp_session(live_server.url, vlevel_key, work)

    assert [str(r.uri) for r in listed.resources] == ["governance://manifest"]
    assert templates.resource_templates[0].uri_template == "governance://injection-block/{domain}/{project}/{story}"
    assert json.loads(manifest.contents[0].text)["id"] == "agent.seo.vlevel"
    assert "_aucun résultat_" in block.contents[0].text


def test_a_sessions_prompt_levels_are_prompts_for_its_agent_only(live_server, vlevel_key):
    from mcp.shared.exceptions import MCPError

    from agents.models import Agent
    from governance.kernel.principals import Principal
    from sessions import scheduler

    vlevel = Agent.objects.get(agent_id="agent.seo.vlevel")
    chat = scheduler.start_chat(vlevel, actor=Principal(agent=vlevel), name="chat", require_validation=False)
    other = issue_key(agent=load("agent.seo.architect"))

    async def work(session: ClientSession) -> Any:
        listed = await session.list_prompts()
        level1 = await session.get_prompt("session_level1", {"sessionId": str(chat.pk)})
        return listed, level1

    async def peek(session: ClientSession) -> Any:
        try:
            await session.get_prompt("session_level2", {"sessionId": str(chat.pk)})
        except MCPError as exc:
            return exc.error.message
        return None

    listed, level1 = mcp_session(live_server.url, vlevel_key, work)
    refusal = mcp_session(live_server.url, other, peek)

    assert {p.name for p in listed.prompts} == {"session_level1", "session_level2"}
    assert level1.messages[0].content.text.strip()
    assert refusal == f"No session {str(chat.pk)!r}."  # another agent's session is one that does not exist


def test_a_get_stream_is_refused_so_no_worker_thread_is_held(live_server, vlevel_key):
    headers = {"Authorization": f"Bearer {vlevel_key}", "Accept": "text/event-stream"}
    response = httpx2.get(f"{live_server.url}/mcp", headers=headers, timeout=10)

    assert response.status_code == 405
    assert "POST" in response.headers["Allow"]


def test_the_seed_jazz_question_over_mcp_finds_the_jazz_memories(live_server, vlevel_key):
    """Seed 002's search example through search_subject_memory, with the real model."""
    from memory.subjects import services as subjects
    from tests.support.subjects import alice_documents

    subjects.import_documents("alice", alice_documents(), actor=SYSTEM)

    async def work(session: ClientSession) -> Any:
        arguments = {"subject": "alice", "q": "Quels sont mes genres musicaux préférés ?", "k": 10}
        return await session.call_tool("search_subject_memory", arguments)

    result = mcp_session(live_server.url, vlevel_key, work)

    assert not result.is_error, result.content
    ranked = [hit["id"] for hit in result.structured_content["hits"]]
    assert set(ranked[:2]) == {"pref_001", "conv_20251116_001"}


def test_a_nul_character_in_an_argument_is_a_clear_refusal_not_a_database_error(live_server, vlevel_key):
    from memory.models import GateResult

    async def work(session: ClientSession) -> Any:
        return await session.call_tool("record_gate_result", {"story": "PD\u00001", "gate": 1, "verdict": "GO"})

    result = mcp_session(live_server.url, vlevel_key, work)

    assert result.is_error
    text = result.content[0].text
    assert "NUL" in text or "\\u0000" in text
    assert "psycopg" not in text
    assert "DataError" not in text
    assert GateResult.objects.count() == 0


def test_memory_writes_outside_the_manifest_over_mcp_are_refused_and_write_nothing(live_server, vlevel_key):
    """Issue 34.1 through the MCP door: the same write reach as REST (vlevel is SEO)."""
    from memory.models import Clarification, GateResult

    async def work(session: ClientSession) -> Any:
        into_rag = await session.call_tool(
            "add_clarification", {"story": "PD-9", "domain": "rag", "project": "p", "answers": ["a", "b", "c", "d"]}
        )
        no_work = await session.call_tool("record_gate_result", {"story": "PD-9", "gate": 8, "verdict": "GO"})
        return into_rag, no_work

    into_rag, no_work = mcp_session(live_server.url, vlevel_key, work)

    assert into_rag.is_error
    assert no_work.is_error
    assert "domain 'rag'" in into_rag.content[0].text
    assert not Clarification.objects.exists()
    assert not GateResult.objects.exists()
