"""Secrets in an upstream tool's result, end to end: an agent calls through /mcp an upstream whose
tool answers with an AWS key, the plane's own SECRET_KEY or an ordinary answer, and gets what the
upstream's setting says (redacted, refused, or unchanged); the call log counts what was found;
no row, audit detail or log line ever holds the value."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.apps import apps
from django.conf import settings
from django.urls import reverse
from mcp.client.session import ClientSession
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, ToolAnnotations

from agents.registry import load_manifest
from gateway.models import GatewayCall, UpstreamServer
from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM
from tests.factories.gateway import GatewayCallFactory, UpstreamServerFactory
from tests.support.keys import issue_key
from tests.support.manifests import manifest_text
from tests.support.mcp import mcp_session
from tests.support.processes import free_port
from tests.support.upstream import served_app

pytestmark = pytest.mark.django_db(transaction=True)

TOOL = "mcp__supabase__execute_sql"  # what agent.seo.vlevel's manifest grants (read)
AWS_KEY_ID = "AKIA" + "IOSFODNN7EXAMPLE"  # assembled: no scanner of this repository takes it for a leak
ORDINARY = "3 rows: home, pricing, blog"


def answers() -> dict[str, str]:
    """What the upstream's tool returns for each query the agent sends (never the secret itself:
    the agent's arguments are kept in the call log)."""
    return {
        "aws": f"[default]\naws_access_key_id = {AWS_KEY_ID}\nregion = eu-west-1",
        "env": f"DEBUG=false\nSECRET_KEY={settings.SECRET_KEY}\n",
        "rows": ORDINARY,
    }


@contextmanager
def leaky_upstream() -> Iterator[str]:
    """An upstream MCP server named as the manifest expects, whose read-only ``execute_sql``
    answers ``answers()[query]``, served over Streamable HTTP; yields its URL."""
    server = MCPServer("leaky-upstream")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def execute_sql(query: str) -> str:
        """Run a SQL query."""
        return answers()[query]

    port = free_port()
    with served_app(server.streamable_http_app(json_response=True), port):
        yield f"http://127.0.0.1:{port}/mcp"


def call(live_server: Any, mode: str, query: str) -> CallToolResult:
    """The agent's call of ``execute_sql`` with ``query``, through an upstream set to ``mode``."""
    key = issue_key(agent=load_manifest(manifest_text("agent.seo.vlevel"), actor=SYSTEM)[0].agent)
    with leaky_upstream() as url:
        UpstreamServer.objects.create(name="supabase", url=url, internal=True, result_secrets=mode)

        async def work(session: ClientSession) -> Any:
            return await session.call_tool(TOOL, {"query": query})

        return mcp_session(live_server.url, key, work)


def stored_anywhere(value: str) -> list[str]:
    """The tables that hold ``value`` in any row (every model of every app: rows, audit, checks)."""
    found = []
    for model in apps.get_models():
        rows = list(model._default_manager.values())
        if value in json.dumps(rows, default=str):
            found.append(model._meta.label)
    return found


def logged(caplog: pytest.LogCaptureFixture, value: str) -> list[str]:
    return [record.getMessage() for record in caplog.records if value in record.getMessage()]


SECRETS = [
    pytest.param("aws", lambda: AWS_KEY_ID, "AWS Access Key", id="aws-key"),
    pytest.param("env", lambda: settings.SECRET_KEY, "Platform Secret", id="secret-key"),
]


@pytest.mark.parametrize(("query", "secret", "kind"), SECRETS)
def test_by_default_the_agent_gets_the_result_with_each_secret_redacted(live_server, caplog, query, secret, kind):
    caplog.set_level(logging.DEBUG)

    result = call(live_server, "redact", query)

    assert not result.is_error, result.content
    text = result.content[0].text
    assert f"[redacted: {kind}]" in text
    assert secret() not in text
    row = GatewayCall.objects.get()
    assert (row.outcome, row.refusal, row.secrets_found, row.secret_kinds) == ("ok", "", 1, [kind])
    assert stored_anywhere(secret()) == []
    assert logged(caplog, secret()) == []
    assert any(f"held 1 secret(s) ({kind}): redacted" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(("query", "secret", "kind"), SECRETS)
def test_a_blocking_upstreams_result_never_reaches_the_agent(live_server, caplog, query, secret, kind):
    caplog.set_level(logging.DEBUG)

    result = call(live_server, "block", query)

    assert result.is_error
    body = json.loads(result.content[0].text)
    assert body["refusal"] == "SecretInResult"
    assert body["secrets"] == [kind]
    assert secret() not in result.model_dump_json()
    assert "eu-west-1" not in result.model_dump_json()  # nothing of the result, not only the secret
    row = GatewayCall.objects.get()
    assert (row.outcome, row.refusal, row.secrets_found, row.secret_kinds) == ("refused", "SecretInResult", 1, [kind])
    assert row.latency_ms is not None  # it was forwarded: the upstream answered
    assert stored_anywhere(secret()) == []
    assert logged(caplog, secret()) == []


@pytest.mark.parametrize(("query", "secret", "kind"), SECRETS)
def test_a_log_only_upstreams_result_passes_unchanged_and_is_still_counted(live_server, caplog, query, secret, kind):
    caplog.set_level(logging.DEBUG)

    result = call(live_server, "log", query)

    assert not result.is_error, result.content
    assert secret() in result.content[0].text  # the operator chose to let it through
    row = GatewayCall.objects.get()
    assert (row.outcome, row.refusal, row.secrets_found, row.secret_kinds) == ("ok", "", 1, [kind])
    assert stored_anywhere(secret()) == []
    assert logged(caplog, secret()) == []
    assert any(f"held 1 secret(s) ({kind}): passed unchanged" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("mode", ["redact", "block", "log"])
def test_an_ordinary_answer_passes_untouched_whatever_the_setting(live_server, mode):
    result = call(live_server, mode, "rows")

    assert not result.is_error, result.content
    assert result.content[0].text == ORDINARY
    row = GatewayCall.objects.get()
    assert (row.outcome, row.secrets_found, row.secret_kinds) == ("ok", 0, [])


def test_a_new_upstream_redacts_unless_the_operator_chooses_otherwise():
    assert UpstreamServer(name="new", url="https://mcp.example.com/mcp").result_secrets == "redact"


def test_an_admin_chooses_to_block_and_the_audit_names_the_change(client, staff_admin):
    client.force_login(staff_admin)
    posted = {"name": "crm", "transport": "http", "url": "http://10.0.0.5:8080/mcp", "internal": "on"}

    response = client.post("/admin/gateway/upstreamserver/add/", posted | {"result_secrets": "block", "enabled": "on"})

    assert response.status_code == 302, response.content
    assert UpstreamServer.objects.get().result_secrets == "block"
    assert "result_secrets" in AuditEvent.objects.get(action="gateway.upstream_added").data["fields"]


def test_the_operator_pages_show_the_setting_and_what_a_call_held(client, viewer, agent):
    server = UpstreamServerFactory.create(
        name="crm", url="http://10.0.0.5:8080/mcp", internal=True, result_secrets="log"
    )
    GatewayCallFactory.create(
        agent=agent, server=server, secrets_found=2, secret_kinds=["AWS Access Key", "Platform Secret"]
    )
    client.force_login(viewer)

    servers = client.get(reverse("gateway:servers")).content.decode()
    calls = client.get(reverse("gateway:calls")).content.decode()

    assert "<dt>Secrets in results</dt><dd>Only log them</dd>" in servers
    assert '<span title="AWS Access Key, Platform Secret">2 secrets in the result</span>' in calls
