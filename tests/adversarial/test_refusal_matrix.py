"""Every write endpoint against every caller who must not use it: the owner agent where only
operators may act, another agent, an operator without the permission, a reviewer, a revoked key
and no key at all. Each attempt must be refused, write nothing, and leave a trace: an audit row
for every caller with a key of ours, a security log line for a request with no key.

The table lists who is refused; who is allowed is what the functional suites exercise. A new
write endpoint fails `test_the_matrix_covers_every_write_endpoint` until it has its row.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from gateway import services
from gateway.models import UpstreamServer
from governance.kernel.logs import loggable_path
from governance.kernel.principals import SYSTEM
from tests.support.refusals import last_audit_id, nothing_written, refusals_since
from tests.support.world import World

OWNER, OTHER, OUTSIDER, REVIEWER = "owner agent", "other agent", "operator without permission", "reviewer"
KEYLESS = ("revoked key", "no key")
VLEVEL = "/agents/agent.seo.vlevel"
ENVELOPE = {
    "intent": "seo_audit",
    "scope": {"entityType": "page"},
    "payload": {"urls": ["https://example.com/"]},
    "context": {"source": "manual"},
}
MANIFEST_YAML = "Agent:\n  id: agent.seo.vlevel\n  version: 9.0.0\n"
ALICE = "/memory/subjects/alice"
EMOTION = {"emotion": "neutre", "intensity": 0.5, "triggered_by": "user_message"}
UPSTREAM = "crm"  # an upstream server the world has, for the writes that name one


@dataclass(frozen=True)
class Attempt:
    """One write endpoint: how to call it in ``world`` and who must be refused."""

    method: str
    template: str  # the OpenAPI path
    path: Callable[[World], str]
    body: Callable[[World], Any]
    refused: tuple[str, ...]
    content_type: str = "application/json"
    signed: bool = False  # proven by a request signature, not a key: every key is 401 there


def fixed(value: Any) -> Callable[[World], Any]:
    return lambda world: value


ATTEMPTS = [
    Attempt(
        "post",
        "/agents",
        fixed("/agents"),
        fixed({"agent_id": "agent.evil.twin", "name": "Twin"}),
        (OWNER, OTHER, OUTSIDER, REVIEWER),
    ),
    Attempt(
        "put",
        "/agents/{agent_id}/manifest",
        fixed(f"{VLEVEL}/manifest"),
        fixed(MANIFEST_YAML),
        (OWNER, OTHER, OUTSIDER, REVIEWER),
        content_type="application/yaml",
    ),
    Attempt(
        "post",
        "/agents/{agent_id}/tools/{tool_id}/calls",
        fixed(f"{VLEVEL}/tools/mcp__supabase__execute_sql/calls"),
        fixed({}),
        (OTHER, OUTSIDER, REVIEWER),
    ),
    Attempt(
        "post",
        "/automations",
        fixed("/automations"),
        fixed({"name": "x", "agentId": "agent.seo.vlevel", "trigger": "MANUAL", "messages": [{"text": "hi"}]}),
        (OTHER, OUTSIDER, REVIEWER),
    ),
    Attempt(
        "post",
        "/automations/provider-profiles",
        fixed("/automations/provider-profiles"),
        fixed({"name": "exfiltrate", "provider": "openai", "model": "gpt-4o", "secretName": "PROVIDER_KEY_OPENAI"}),
        (OWNER, OTHER, OUTSIDER, REVIEWER),
    ),
    Attempt(
        "patch",
        "/automations/{automation_id}",
        lambda w: f"/automations/{w.automation_id}",
        fixed({"enabled": False, "cron": "0 3 * * *"}),
        (OTHER, OUTSIDER, REVIEWER),
    ),
    Attempt(
        "post",
        "/automations/{automation_id}/execute",
        lambda w: f"/automations/{w.automation_id}/execute",
        fixed(None),
        (OTHER, OUTSIDER, REVIEWER),
    ),
    Attempt(
        "post",
        "/contracts/audit",
        fixed("/contracts/audit"),
        fixed({"items": [{"contract": "retrieval_answer", "output": {}}]}),
        (OUTSIDER, REVIEWER),
    ),
    Attempt(
        "post",
        "/contracts/{name}/spec-audit",
        fixed("/contracts/retrieval_answer/spec-audit"),
        fixed({"example": {}}),
        (OUTSIDER,),
    ),
    Attempt(
        "post",
        "/contracts/{name}/validate",
        fixed("/contracts/retrieval_answer/validate"),
        fixed({"output": {}}),
        (OUTSIDER, REVIEWER),
    ),
    Attempt(
        "post",
        "/gateway/upstreams",
        fixed("/gateway/upstreams"),
        fixed({"name": "exfil", "url": "http://10.0.0.66/mcp", "internal": True}),
        (OWNER, OTHER, OUTSIDER, REVIEWER),
    ),
    Attempt(
        "patch",
        "/gateway/upstreams/{name}",
        fixed(f"/gateway/upstreams/{UPSTREAM}"),
        fixed({"url": "http://10.0.0.66/mcp"}),
        (OWNER, OTHER, OUTSIDER, REVIEWER),
    ),
    Attempt(
        "delete",
        "/gateway/upstreams/{name}",
        fixed(f"/gateway/upstreams/{UPSTREAM}"),
        fixed(None),
        (OWNER, OTHER, OUTSIDER, REVIEWER),
    ),
    Attempt("post", "/jobs", fixed("/jobs"), fixed(ENVELOPE), (OUTSIDER, REVIEWER)),
    Attempt("post", "/jobs/validate", fixed("/jobs/validate"), fixed(ENVELOPE), (OUTSIDER, REVIEWER)),
    Attempt("post", "/jobs/lease", fixed("/jobs/lease"), fixed(None), (OUTSIDER, REVIEWER)),
    Attempt(
        "post",
        "/triggers/{name}/webhook",
        fixed("/triggers/orders/webhook"),
        fixed({"urls": ["https://example.com/"]}),
        (OWNER, OTHER, OUTSIDER, REVIEWER),
        signed=True,
    ),
    Attempt(
        "post", "/jobs/{job_id}/lease", lambda w: f"/jobs/{w.job_id}/lease", fixed(None), (OTHER, OUTSIDER, REVIEWER)
    ),
    Attempt(
        "post",
        "/jobs/{job_id}/escalate",
        lambda w: f"/jobs/{w.job_id}/escalate",
        fixed({"reason": "take it over"}),
        (OTHER, OUTSIDER, REVIEWER),
    ),
    Attempt(
        "post",
        "/jobs/{job_id}/result",
        lambda w: f"/jobs/{w.job_id}/result",
        fixed({"success": True, "data": {}}),
        (OTHER, OUTSIDER, REVIEWER),
    ),
    Attempt(
        "post",
        "/jobs/{job_id}/state",
        lambda w: f"/jobs/{w.job_id}/state",
        fixed({"currentNode": "x"}),
        (OTHER, OUTSIDER, REVIEWER),
    ),
    Attempt(
        "post",
        "/memory/clarifications",
        fixed("/memory/clarifications"),
        fixed({"story": "S-1", "domain": "seo", "project": "p", "answers": ["a", "b", "c", "d"]}),
        (OUTSIDER, REVIEWER),
    ),
    Attempt(
        "post",
        "/memory/gate-results",
        fixed("/memory/gate-results"),
        fixed({"story": "S-1", "gate": 8, "verdict": "GO"}),
        (OUTSIDER, REVIEWER),
    ),
    Attempt(
        "post",
        "/memory/injection-block",
        fixed("/memory/injection-block"),
        fixed({"story": "S-1", "domain": "seo", "project": "p", "query_text": "q"}),
        (OUTSIDER, REVIEWER),
    ),
    Attempt(
        "post",
        "/memory/learnings",
        fixed("/memory/learnings"),
        fixed({"story": "S-1", "gate": 8, "domain": "seo", "project": "p", "tags": ["t"], "text": "x"}),
        (OUTSIDER, REVIEWER),
    ),
    Attempt("delete", "/memory/subjects/{subject}", fixed(ALICE), fixed(None), (OWNER, OTHER, OUTSIDER, REVIEWER)),
    Attempt(
        "put",
        "/memory/subjects/{subject}/agents",
        fixed(f"{ALICE}/agents"),
        fixed({"agents": []}),
        (OWNER, OTHER, OUTSIDER, REVIEWER),
    ),
    Attempt(
        "post", "/memory/subjects/{subject}/emotions", fixed(f"{ALICE}/emotions"), fixed(EMOTION), (OUTSIDER, REVIEWER)
    ),
    Attempt(
        "post",
        "/memory/subjects/{subject}/facts",
        fixed(f"{ALICE}/facts"),
        fixed({"kind": "event", "values": {"event": "x", "date": "2025-01-01"}}),
        (OUTSIDER, REVIEWER),
    ),
    Attempt(
        "post",
        "/memory/subjects/{subject}/import",
        fixed(f"{ALICE}/import"),
        fixed({}),
        (OWNER, OTHER, OUTSIDER, REVIEWER),
    ),
    Attempt(
        "post",
        "/memory/subjects/{subject}/interactions",
        fixed(f"{ALICE}/interactions"),
        fixed({"count": 1}),
        (OUTSIDER, REVIEWER),
    ),
    Attempt(
        "post",
        "/memory/veille",
        fixed("/memory/veille"),
        fixed("---\ntitle: t\ndate: 2025-01-01\nverdict_veille: signal\nimpact_pv: fort\n---\nbody"),
        (OUTSIDER, REVIEWER),
        content_type="text/markdown",
    ),
    Attempt("post", "/approvals", fixed("/approvals"), fixed({"action": "publish"}), (OUTSIDER, REVIEWER)),
    Attempt(
        "post",
        "/registries/{registry}",
        fixed("/registries/intents"),
        fixed({"value": "exfiltrate_all", "label": "Exfiltrate"}),
        (OWNER, OTHER, OUTSIDER, REVIEWER),
    ),
    Attempt(
        "patch",
        "/registries/{registry}/{value}",
        fixed("/registries/intents/seo_audit"),
        fixed({"label": "Do nothing"}),
        (OWNER, OTHER, OUTSIDER, REVIEWER),
    ),
    Attempt(
        "post",
        "/registries/{registry}/{value}/retire",
        fixed("/registries/intents/seo_audit/retire"),
        fixed(None),
        (OWNER, OTHER, OUTSIDER, REVIEWER),
    ),
    Attempt(
        "post",
        "/reviews/decisions",
        fixed("/reviews/decisions"),
        lambda w: {"ids": [w.review_item_id], "decision": "approve"},
        (OWNER, OTHER, OUTSIDER),
    ),
    Attempt(
        "post",
        "/reviews/{item_id}/decision",
        lambda w: f"/reviews/{w.review_item_id}/decision",
        fixed({"decision": "approve"}),
        (OWNER, OTHER, OUTSIDER),
    ),
    Attempt(
        "post",
        "/reviews/{item_id}/decision",
        lambda w: f"/reviews/{w.review_item_id}/decision",
        fixed({"decision": "answer", "response": "Home"}),
        (OWNER, OTHER, OUTSIDER),
    ),
    Attempt("post", "/sessions", fixed("/sessions"), fixed({"type": "CHAT", "name": "x"}), (OUTSIDER, REVIEWER)),
    Attempt(
        "post",
        "/sessions",
        fixed("/sessions"),
        fixed({"type": "AUTOMATION", "name": "x", "messages": [{"text": "audit the shop"}]}),
        (OUTSIDER, REVIEWER),
    ),
    Attempt(
        "post",
        "/sessions/{session_id}/events",
        lambda w: f"/sessions/{w.session_id}/events",
        fixed({"type": "UserMessageSent", "payload": {"text": "hi"}}),
        (OTHER, OUTSIDER, REVIEWER),
    ),
    Attempt(
        "post",
        "/sessions/{session_id}/stop",
        lambda w: f"/sessions/{w.session_id}/stop",
        fixed(None),
        (OTHER, OUTSIDER, REVIEWER),
    ),
]
CASES = [
    pytest.param(attempt, caller, id=f"{attempt.method.upper()} {attempt.template} by {caller}")
    for attempt in ATTEMPTS
    for caller in (*attempt.refused, *KEYLESS)
]


@pytest.fixture
def world(world: World) -> World:
    """The adversarial world, with an upstream MCP server an operator registered."""
    server = UpstreamServer(name=UPSTREAM, url="http://10.0.0.5:8080/mcp", internal=True)
    services.save_upstream(server, actor=SYSTEM, changed=["name", "url", "internal"])
    return world


def api_for(world: World, caller: str):
    return {
        OWNER: world.owner,
        OTHER: world.other,
        OUTSIDER: world.outsider,
        REVIEWER: world.reviewer,
        "revoked key": world.revoked,
        "no key": world.anonymous,
    }[caller]


def call(world: World, attempt: Attempt, caller: str):
    api = api_for(world, caller)
    body = attempt.body(world)
    if attempt.method == "delete":
        return api.delete(attempt.path(world))
    raw = body if isinstance(body, str) else None
    return api.send(attempt.method, attempt.path(world), body, raw=raw, content_type=attempt.content_type)


@pytest.mark.django_db
@pytest.mark.parametrize(("attempt", "caller"), CASES)
def test_the_caller_is_refused_nothing_is_written_and_the_attempt_is_traced(world, attempt, caller, caplog):
    since = last_audit_id()
    caplog.set_level(logging.WARNING, logger="governance.security")

    with nothing_written():
        response = call(world, attempt, caller)

    expected = 401 if caller in KEYLESS or attempt.signed else 403
    assert response.status_code == expected, response.content
    assert response["Content-Type"] == "application/problem+json"
    refusals = refusals_since(since)
    if caller == "no key":
        assert not refusals  # anonymous traffic never fills the database ...
        # ... it is logged, by its path as logs keep it (no subject key: governance/kernel/logs.py)
        logged = loggable_path(attempt.path(world))
        assert any(logged in record.getMessage() for record in caplog.records)
        return
    assert len(refusals) == 1
    assert refusals[0].target_id == f"{attempt.method.upper()} /api/v1{attempt.path(world)}"
    assert refusals[0].data["status"] == expected
    if caller == "revoked key":
        assert refusals[0].data["key_revoked"] is True
        assert refusals[0].actor.startswith("agent.seo.vlevel")


@pytest.mark.django_db
def test_the_matrix_covers_every_write_endpoint(client):
    document = client.get("/api/v1/openapi.json").json()
    writes = {
        (method, path.removeprefix("/api/v1"))
        for path, operations in document["paths"].items()
        for method in operations
        if method in {"post", "put", "patch", "delete"}
    }
    covered = {(attempt.method, attempt.template) for attempt in ATTEMPTS}
    assert writes - covered == set(), "write endpoints without a row in the refusal matrix"
