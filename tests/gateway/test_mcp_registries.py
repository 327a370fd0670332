"""An agent on MCP reads the registries where it needs them: submit_job's input schema lists the
intents and entity types in use when tools/list is answered, and an unknown one is a tool error
that says how an operator adds it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp.client.session import ClientSession

from agents import registries
from agents.vocabulary import Registry
from governance.kernel.principals import SYSTEM
from tests.support.keys import issue_key
from tests.support.manifests import load
from tests.support.mcp import mcp_session

pytestmark = pytest.mark.django_db(transaction=True)


def submit_job_schema(url: str, key: str) -> dict[str, Any]:
    async def work(session: ClientSession) -> Any:
        return await session.list_tools()

    tools = {tool.name: tool for tool in mcp_session(url, key, work).tools}
    return tools["submit_job"].input_schema


def scope_schema(schema: dict[str, Any]) -> dict[str, Any]:
    scope = schema["properties"]["scope"]
    return schema["$defs"][scope["$ref"].rsplit("/", 1)[1]] if "$ref" in scope else scope


def test_tools_list_names_the_active_intents_and_entity_types_of_the_moment(live_server):
    key = issue_key(agent=load("agent.seo.vlevel"))

    before = submit_job_schema(live_server.url, key)
    registries.add_value(Registry.INTENTS, "summarize_ticket", actor=SYSTEM)
    registries.add_value(Registry.ENTITY_TYPES, "ticket", actor=SYSTEM)
    registries.retire_value(Registry.INTENTS, "kg_diagnose", actor=SYSTEM)
    after = submit_job_schema(live_server.url, key)

    assert "seo_audit" in before["properties"]["intent"]["enum"]
    assert "summarize_ticket" not in before["properties"]["intent"]["enum"]
    assert "summarize_ticket" in after["properties"]["intent"]["enum"]
    assert "kg_diagnose" not in after["properties"]["intent"]["enum"]
    assert "ticket" in scope_schema(after)["properties"]["entityType"]["enum"]
    assert "ticket" not in scope_schema(before)["properties"]["entityType"]["enum"]


def test_an_unknown_intent_over_mcp_says_how_an_operator_adds_it(live_server):
    key = issue_key(agent=load("agent.seo.vlevel"))
    envelope = {"intent": "summarize_ticket", "scope": {"entityType": "page"}, "context": {"source": "manual"}}

    async def work(session: ClientSession) -> Any:
        return await session.call_tool("submit_job", envelope)

    result = mcp_session(live_server.url, key, work)

    assert result.is_error
    body = json.loads(result.content[0].text)
    [error] = body["errors"]
    assert error["loc"][-1] == "intent"
    assert "manage.py registry add intents summarize_ticket" in error["msg"]
