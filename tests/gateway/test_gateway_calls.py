"""What the gateway records of each call, and the job, session and contract a call is tied to:
a call may name its job (its state, budget and dryRun apply), its session is recorded, and a tool
whose manifest entry names a contract has each result checked like any LLM output."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp_types import RequestParamsMeta

from agents.models import Agent, Job
from agents.registry import load_manifest
from gateway.models import GatewayCall, UpstreamServer
from governance.contracts import services as contracts
from governance.contracts.models import ContractCheck
from governance.kernel.principals import SYSTEM, Principal
from governance.reviews.services import payload_hash
from sessions import scheduler
from tests.support.jobs import submit_job
from tests.support.keys import issue_key
from tests.support.manifests import manifest_text
from tests.support.mcp import mcp_session
from tests.support.upstream import upstream_server

pytestmark = pytest.mark.django_db(transaction=True)

SQL = "mcp__supabase__execute_sql"
CLASSIFY = "mcp__supabase__classify_intent"
TOOLS = "  tools:\n"


def vlevel(*extra_tools: str) -> tuple[Agent, str]:
    """agent.seo.vlevel (it grants mcp__supabase__execute_sql, read), with more tool entries."""
    text = manifest_text("agent.seo.vlevel").replace(TOOLS, TOOLS + "".join(extra_tools), 1)
    agent = load_manifest(text, actor=SYSTEM)[0].agent
    return agent, issue_key(agent=agent)


def classify_entry(contract: str) -> str:
    return f"    - tool_id: {CLASSIFY}\n      permissions: read\n      rate_limit: 10\n      contract: {contract}\n"


@pytest.fixture
def supabase(monkeypatch):
    with upstream_server() as upstream:
        UpstreamServer.objects.create(name="supabase", url=upstream.url, internal=True)
        yield upstream


def call(
    key: str, live_server: Any, name: str, arguments: dict[str, Any], meta: RequestParamsMeta | None = None
) -> Any:
    async def work(session: ClientSession) -> Any:
        return await session.call_tool(name, arguments, meta=meta)

    return mcp_session(live_server.url, key, work)


def refusal(result: Any) -> dict[str, Any]:
    assert result.is_error, result.content
    return json.loads(result.content[0].text)


def test_a_call_naming_its_job_is_logged_with_it_and_the_agents_active_session(live_server, supabase):
    agent, key = vlevel()
    job = submit_job(agent, {"urls": ["https://shop.test/a"]})
    session = scheduler.start_chat(agent, actor=Principal(agent=agent), name="audit", require_validation=False)

    result = call(key, live_server, SQL, {"query": "select 1"}, meta={"jobId": str(job.pk)})

    assert not result.is_error, result.content
    logged = GatewayCall.objects.get()
    assert (logged.job_id, logged.session_id) == (job.pk, session.pk)
    assert logged.tool_call.job_id == job.pk


def test_a_call_for_a_dry_run_job_is_recorded_and_never_forwarded(live_server, supabase):
    agent, key = vlevel()
    job = submit_job(agent, {"urls": ["https://shop.test/a"]}, constraints={"maxTokens": 1000, "dryRun": True})

    result = call(key, live_server, SQL, {"query": "delete from pages"}, meta={"jobId": str(job.pk)})

    answer = refusal(result)  # a call not made has no result
    assert (answer["refusal"], answer["dryRun"]) == ("DryRun", True)
    assert answer["toolCallId"] == GatewayCall.objects.get().tool_call_id
    assert supabase.calls == []
    assert GatewayCall.objects.get().outcome == "dry_run"


def test_a_finished_job_or_a_spent_budget_makes_no_more_calls(live_server, supabase):
    agent, key = vlevel()
    finished = submit_job(agent, {"urls": ["https://shop.test/a"]}, key="finished")
    Job.objects.filter(pk=finished.pk).update(status=Job.Status.SUCCEEDED)
    spent = submit_job(agent, {"urls": ["https://shop.test/b"]}, key="spent")
    Job.objects.filter(pk=spent.pk).update(budget={**spent.budget, "tokensUsed": 1000, "tokensRemaining": 0})

    after_end = refusal(call(key, live_server, SQL, {"query": "select 1"}, meta={"jobId": str(finished.pk)}))
    over_budget = refusal(call(key, live_server, SQL, {"query": "select 1"}, meta={"jobId": str(spent.pk)}))

    assert after_end["refusal"] == "Conflict"
    assert "succeeded" in after_end["error"]
    assert over_budget["refusal"] == "Conflict"
    assert "token budget" in over_budget["error"]
    assert supabase.calls == []
    assert set(GatewayCall.objects.values_list("outcome", "refusal")) == {("refused", "Conflict")}


def test_an_agent_cannot_file_its_call_under_another_agents_job(live_server, supabase):
    _, key = vlevel()
    other = load_manifest(manifest_text("agent.seo.vlevel").replace("agent.seo.vlevel", "agent.seo.b"), actor=SYSTEM)
    theirs = submit_job(other[0].agent, {"urls": ["https://shop.test/a"]})

    answer = refusal(call(key, live_server, SQL, {"query": "select 1"}, meta={"jobId": str(theirs.pk)}))

    assert answer["refusal"] == "InvalidInput"
    assert answer["errors"][0]["loc"] == ["_meta", "jobId"]
    assert supabase.calls == []


def test_a_tools_result_is_checked_against_the_contract_its_manifest_entry_names(live_server, supabase):
    contracts.import_catalog(contracts.CATALOG.read_text(encoding="utf-8"), actor=SYSTEM)
    _, key = vlevel(classify_entry("intent_ingestion"))

    good = call(key, live_server, CLASSIFY, {"label": "buy", "confidence": 0.9})
    bad = call(key, live_server, CLASSIFY, {"label": "buy", "confidence": 1.5})

    assert not good.is_error
    assert not bad.is_error
    assert good.meta["contract"]["compliant"] is True
    assert bad.meta["contract"]["compliant"] is False
    assert any(v["path"] == "intent.confidence" for v in bad.meta["contract"]["violations"])
    checks = ContractCheck.objects.filter(source="tool").order_by("checked_at")
    assert [c.compliant for c in checks] == [True, False]
    assert GatewayCall.objects.get(contract_check=checks[1]).tool_id == CLASSIFY


def test_a_manifest_naming_an_unknown_contract_for_a_tool_is_refused(db):
    text = manifest_text("agent.seo.vlevel").replace(TOOLS, TOOLS + classify_entry("nope"))
    from governance.kernel.exceptions import InvalidInput

    with pytest.raises(InvalidInput) as refused:
        load_manifest(text, actor=SYSTEM)

    assert refused.value.errors[0]["loc"] == ["body", "tools", 0, "contract"]


def test_arguments_are_kept_only_as_a_hash_when_the_setting_says_so(live_server, supabase, settings):
    settings.GATEWAY_STORE_ARGUMENTS = False
    _, key = vlevel()

    call(key, live_server, SQL, {"query": "select secret from vault"})

    logged = GatewayCall.objects.get()
    assert logged.arguments is None
    assert logged.arguments_hash == payload_hash({"query": "select secret from vault"})


def test_an_operator_key_neither_calls_nor_sees_upstream_tools(live_server, supabase, admin_operator):
    key = issue_key(user=admin_operator)

    answer = refusal(call(key, live_server, SQL, {"query": "select 1"}))

    assert "No tool" in answer["error"]
    assert supabase.calls == []
    assert not GatewayCall.objects.exists()  # an operator has no agent to log the call under
