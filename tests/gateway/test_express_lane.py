"""The express lane of /mcp (gateway/express.py): a governed ``tools/call`` the SDK's transport
would accept as it is, answered in the request's thread without the SDK.

What an agent must not be able to tell: the express lane's answer is the SDK's (the same JSON-RPC
body with the lane on or off), a request the lane must not take is answered by the SDK as before,
nothing a key may not do gets through it, the rate limit holds exactly under concurrent clients,
and what a crash between the answer and the outcome's write leaves behind: the row written as
forwarded before the call was made, which the operator's call log shows as such."""

from __future__ import annotations

import http.client
import json
import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.urls import reverse

from agents.models import Agent, ToolCall
from agents.registry import load_manifest
from gateway import express, outcomes
from gateway.models import GatewayCall, UpstreamServer
from governance.kernel.principals import SYSTEM
from governance.reviews.services import payload_hash
from tests.support.keys import issue_key
from tests.support.manifests import load, manifest_text
from tests.support.upstream import upstream_server

pytestmark = pytest.mark.django_db(transaction=True)

SQL = "mcp__supabase__execute_sql"  # agent.seo.vlevel's manifest grants it (read, 100 a minute)
DROP = "mcp__supabase__drop_table"  # the upstream has it; no shipped manifest grants it
VERSION = "2025-11-25"
INJECTION = {"story": "S-1", "domain": "seo", "project": "site", "query_text": "canonical tags"}


@dataclass
class Answer:
    status: int
    headers: dict[str, str]  # by lowercase name
    text: str

    @property
    def body(self) -> Any:
        return json.loads(self.text)

    @property
    def result(self) -> dict[str, Any]:
        assert self.status == 200, self.text
        return self.body["result"]


def headers_for(key: str | None, **changes: str | None) -> dict[str, str]:
    """The headers the SDK's client sends with a call (no session: /mcp is stateless), changed."""
    headers: dict[str, str | None] = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": VERSION,
        "Authorization": f"Bearer {key}" if key else None,
    }
    headers.update(changes)
    return {name: value for name, value in headers.items() if value is not None}


def post(url: str, body: Any, headers: dict[str, str]) -> Answer:
    """One raw POST to ``url``/mcp on a connection of its own: only the headers given (and the
    Host, unless given), so a test can leave out what a client library would add."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=60)
    try:
        connection.request("POST", "/mcp", json.dumps(body).encode(), headers)
        response = connection.getresponse()
        return Answer(response.status, {n.lower(): v for n, v in response.getheaders()}, response.read().decode())
    finally:
        connection.close()


def tools_call(name: str, arguments: dict[str, Any], request_id: int | str = 1, **params: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, **params},
    }


def call(live_server: Any, key: str | None, name: str, arguments: dict[str, Any], **headers: str | None) -> Answer:
    return post(live_server.url, tools_call(name, arguments), headers_for(key, **headers))


def refusal(answer: Answer) -> dict[str, Any]:
    """The refusal an agent reads: a tool error whose text is JSON."""
    result = answer.result
    assert result["isError"] is True, result
    return json.loads(result["content"][0]["text"])


def listed(live_server: Any, key: str) -> None:
    """An agent's tools/list (through the SDK): the gateway lists the upstream and keeps its tools,
    as it does before its first call, so the calls that follow are admitted in one round trip."""
    answer = post(live_server.url, {"jsonrpc": "2.0", "id": 0, "method": "tools/list"}, headers_for(key))
    assert SQL in {tool["name"] for tool in answer.result["tools"]}


def vlevel(**replacements: str) -> tuple[Agent, str]:
    """agent.seo.vlevel as seed 001 ships it, with some lines of its manifest replaced."""
    text = manifest_text("agent.seo.vlevel")
    for old, new in replacements.items():
        assert old in text
        text = text.replace(old, new, 1)
    agent = load_manifest(text, actor=SYSTEM)[0].agent
    return agent, issue_key(agent=agent)


@pytest.fixture
def supabase() -> Any:
    """The tests' upstream (stateless, as the plain path calls it), registered as ``supabase``."""
    with upstream_server(stateless=True) as served:
        UpstreamServer.objects.create(name="supabase", url=served.url, internal=True)
        yield served


@pytest.fixture
def express_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the calls the express lane answered (the SDK answered every other request)."""
    taken: list[str] = []
    answer = express.answer

    def answered(principal: Any, call: express.Call) -> Any:
        taken.append(call.name)
        return answer(principal, call)

    monkeypatch.setattr(express, "answer", answered)
    return taken


# --- The same answer with the lane on or off ------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        pytest.param(SQL, {"query": "select 1"}, id="upstream-call"),
        pytest.param(DROP, {"name": "pages"}, id="refused-not-granted"),
        pytest.param("get_injection_block", INJECTION, id="platform-tool"),
    ],
)
def test_the_express_lane_answers_a_call_exactly_as_the_sdk_does(
    live_server, supabase, settings, express_calls, name, arguments
):
    _, key = vlevel()
    listed(live_server, key)

    settings.MCP_EXPRESS_CALLS = True
    fast = call(live_server, key, name, arguments)
    settings.MCP_EXPRESS_CALLS = False
    through_sdk = call(live_server, key, name, arguments)

    assert express_calls == [name]  # the first one took the lane, the second went through the SDK
    assert (fast.status, fast.headers["content-type"]) == (200, "application/json")
    assert (through_sdk.status, through_sdk.headers["content-type"]) == (200, "application/json")
    if name == DROP:
        assert refusal(fast)["refusal"] == "NotGranted"
    else:
        assert fast.result["isError"] is False
    expected = [("execute_sql", arguments)] * 2 if name == SQL else []
    assert supabase.calls == expected
    assert fast.body == through_sdk.body  # jsonrpc, id and result, key for key


# --- What the lane must leave to the SDK --------------------------------------------------------


def test_a_batch_is_answered_by_the_sdk_and_nothing_is_forwarded(live_server, supabase, express_calls):
    _, key = vlevel()
    listed(live_server, key)

    answer = post(live_server.url, [tools_call(SQL, {"query": "select 1"})], headers_for(key))

    assert answer.status == 400
    assert answer.body["jsonrpc"] == "2.0"
    assert answer.body["error"]["code"] == -32602
    assert express_calls == []
    assert supabase.calls == []


def test_a_request_naming_a_session_is_answered_by_the_sdk(live_server, supabase, express_calls):
    _, key = vlevel()
    listed(live_server, key)

    answer = call(live_server, key, SQL, {"query": "select 1"}, **{"Mcp-Session-Id": "a-session-of-somebody"})

    assert express_calls == []
    assert answer.body["id"] == 1
    assert answer.result["content"][0]["text"] == "rows for select 1"
    assert supabase.calls == [("execute_sql", {"query": "select 1"})]


def test_a_host_the_mcp_endpoint_does_not_serve_is_the_sdks_421(live_server, supabase, settings, express_calls):
    """A name Django serves but /mcp does not (DNS rebinding): refused before any tool runs."""
    _, key = vlevel()
    listed(live_server, key)
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "rebound.example"]

    answer = call(live_server, key, SQL, {"query": "select 1"}, Host="rebound.example")

    assert answer.status == 421
    assert express_calls == []
    assert supabase.calls == []
    assert not GatewayCall.objects.exists()


def test_a_foreign_origin_is_refused_by_the_sdk(live_server, supabase, express_calls):
    _, key = vlevel()
    listed(live_server, key)

    answer = call(live_server, key, SQL, {"query": "select 1"}, Origin="http://evil.example")

    assert answer.status == 403
    assert express_calls == []
    assert supabase.calls == []


def test_a_call_that_does_not_accept_json_is_the_sdks_406(live_server, supabase, express_calls):
    _, key = vlevel()
    listed(live_server, key)

    missing = call(live_server, key, SQL, {"query": "select 1"}, Accept=None)
    only_events = call(live_server, key, SQL, {"query": "select 2"}, Accept="text/event-stream")

    assert (missing.status, only_events.status) == (406, 406)
    assert express_calls == []
    assert supabase.calls == []


def test_a_call_of_the_2026_revision_is_served_by_the_sdk_its_own_way(live_server, supabase, express_calls):
    """2026-07-28 requests are single exchanges: the SDK answers them with the envelope that
    revision requires (its server info in the result's _meta), which the express lane never writes."""
    _, key = vlevel()
    listed(live_server, key)
    envelope = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    headers = headers_for(key, **{"MCP-Protocol-Version": "2026-07-28"})
    routed = {**headers, "Mcp-Method": "tools/call", "Mcp-Name": SQL}  # that revision's routing headers

    bare = post(live_server.url, tools_call(SQL, {"query": "select 1"}), headers)
    enveloped = post(live_server.url, tools_call(SQL, {"query": "select 2"}, _meta=envelope), routed)

    assert express_calls == []
    # The SDK's refusal of a request without that revision's headers and envelope, as a JSON-RPC error.
    assert bare.status == 400
    assert (bare.body["id"], set(bare.body["error"])) == (1, {"code", "message"})
    result = enveloped.result
    assert result["content"][0]["text"] == "rows for select 2"
    assert result["resultType"] == "complete"
    assert any("serverInfo" in name for name in result["_meta"])
    assert supabase.calls == [("execute_sql", {"query": "select 2"})]


def test_a_task_augmented_call_is_an_mcp_task_of_the_sdk(live_server, supabase, express_calls):
    _, key = vlevel()
    listed(live_server, key)

    answer = post(live_server.url, tools_call(SQL, {"query": "select 1"}, task={"ttl": 60000}), headers_for(key))

    assert express_calls == []
    task = answer.result["task"]
    assert task["taskId"]
    assert task["status"] in {"working", "completed"}
    assert "content" not in answer.result  # a task, not the call's result
    assert supabase.calls == [("execute_sql", {"query": "select 1"})]


# --- Hostile callers ----------------------------------------------------------------------------


def test_no_key_or_a_wrong_key_is_a_401_and_nothing_is_forwarded(live_server, supabase, express_calls):
    _, key = vlevel()
    listed(live_server, key)

    none = call(live_server, None, SQL, {"query": "select 1"})
    wrong = call(live_server, key[:-4] + "xxxx", SQL, {"query": "select 1"})

    assert (none.status, wrong.status) == (401, 401)
    assert none.headers["www-authenticate"].startswith("Bearer")
    assert express_calls == []
    assert supabase.calls == []
    assert not GatewayCall.objects.exists()


def test_an_operators_key_calls_no_upstream_tool_through_the_lane(live_server, supabase, express_calls, admin_operator):
    _, key = vlevel()
    listed(live_server, key)

    answer = refusal(call(live_server, issue_key(user=admin_operator), SQL, {"query": "select 1"}))

    assert express_calls == [SQL]
    assert answer["refusal"] == "NotGranted"
    assert supabase.calls == []
    assert not GatewayCall.objects.exists()  # an operator has no agent to log the call under
    assert not ToolCall.objects.exists()


def test_an_agent_whose_manifest_does_not_grant_the_tool_gets_nothing_through_the_lane(
    live_server, supabase, express_calls
):
    _, key = vlevel()
    listed(live_server, key)  # the upstream's tools are kept: a call of any agent is admitted fast
    indexer = load("agent.rag.indexer")

    answer = refusal(call(live_server, issue_key(agent=indexer), SQL, {"query": "select 1"}))

    assert express_calls == [SQL]
    assert answer["refusal"] == "NotGranted"
    assert supabase.calls == []
    logged = GatewayCall.objects.get()
    assert (logged.agent_id, logged.tool_id, logged.outcome, logged.refusal) == (
        indexer.pk,
        SQL,
        "refused",
        "NotGranted",
    )
    assert not ToolCall.objects.exists()


def test_a_nul_character_in_the_arguments_is_named_and_nothing_is_forwarded(live_server, supabase, express_calls):
    agent, key = vlevel()
    listed(live_server, key)

    answer = refusal(call(live_server, key, SQL, {"query": "select 1\u0000; drop table pages"}))

    assert express_calls == [SQL]
    assert answer["refusal"] == "InvalidInput"
    assert [error["loc"] for error in answer["errors"]] == [["arguments", "query"]]
    assert "NUL" in answer["errors"][0]["msg"]
    assert supabase.calls == []
    logged = GatewayCall.objects.get()
    assert (logged.agent_id, logged.outcome, logged.refusal) == (agent.pk, "refused", "InvalidInput")
    assert logged.arguments is None  # what PostgreSQL cannot store is not stored
    assert not GatewayCall.objects.filter(outcome="forwarded").exists()
    assert not ToolCall.objects.exists()


# --- The rate limit under concurrent clients ----------------------------------------------------


def test_the_rate_limit_holds_exactly_for_concurrent_calls_through_the_lane(live_server, supabase, express_calls):
    agent, key = vlevel(**{"      rate_limit: 100": "      rate_limit: 5"})
    listed(live_server, key)
    clients = 12
    start = threading.Barrier(clients)
    answers: dict[int, Answer] = {}

    def client(n: int) -> None:
        start.wait()
        answers[n] = call(live_server, key, SQL, {"query": f"select {n}"})

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    outcomes.WRITER.flush()

    assert len(answers) == clients
    assert len(express_calls) == clients
    served = [n for n, answer in answers.items() if not answer.result["isError"]]
    refused = [refusal(answer) for answer in answers.values() if answer.result["isError"]]
    assert len(served) == 5
    assert len(supabase.calls) == 5
    assert sorted(arguments["query"] for _, arguments in supabase.calls) == sorted(f"select {n}" for n in served)
    assert [r["refusal"] for r in refused] == ["RateLimited"] * 7
    assert all(r["retryAfter"] > 0 for r in refused)
    logged = Counter(GatewayCall.objects.filter(agent=agent).values_list("outcome", "refusal"))
    assert logged == {("ok", ""): 5, ("refused", "RateLimited"): 7}
    assert ToolCall.objects.filter(agent=agent, tool_id=SQL).count() == 5


# --- A crash between the answer and the outcome -------------------------------------------------


def test_an_outcome_never_written_leaves_the_call_forwarded_and_counted(
    live_server, supabase, express_calls, monkeypatch, client, viewer
):
    """The writer cannot write (the process died, say, with the completion still queued): the
    agent has its answer, and the row written before the call was forwarded says who called which
    tool with which arguments, that it was forwarded, and the rate limit counted it."""
    agent, key = vlevel()
    listed(live_server, key)

    def unwritable(completions: list[outcomes.Completion]) -> None:
        raise ConnectionError("the database is gone")

    monkeypatch.setattr(outcomes, "complete", unwritable)
    arguments = {"query": "select 42"}
    answer = call(live_server, key, SQL, arguments)
    assert outcomes.WRITER.flush()

    assert express_calls == [SQL]
    assert answer.result["isError"] is False
    assert answer.result["content"][0]["text"] == "rows for select 42"
    assert supabase.calls == [("execute_sql", arguments)]
    logged = GatewayCall.objects.get()
    assert logged.outcome == "forwarded"
    assert (logged.agent_id, logged.tool_id, logged.arguments_hash) == (agent.pk, SQL, payload_hash(arguments))
    assert logged.arguments == arguments
    assert logged.latency_ms is None  # what came of it was lost
    counted = ToolCall.objects.get(pk=logged.tool_call_id)
    assert (counted.agent_id, counted.tool_id) == (agent.pk, SQL)

    client.force_login(viewer)
    page = client.get(reverse("gateway:calls"))
    assert page.status_code == 200
    html = page.content.decode()
    row = html.split('<table class="list compact gateway-calls">', 1)[1].split("</tbody>", 1)[0]
    assert '<span class="call-outcome call-forwarded">Forwarded (no outcome recorded)</span>' in row
    assert f"<code>{SQL}</code>" in row
