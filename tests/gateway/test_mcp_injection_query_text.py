"""The injection block tool never fails for its query text over MCP either (issue 34 point 3):
whatever ``query_text`` holds, or none at all, the call is no tool error and gives the three
sections with the seed's placeholders only."""

from __future__ import annotations

from typing import Any

import pytest
from mcp.client.session import ClientSession

from memory.injection import UNAVAILABLE
from tests.support.keys import issue_key
from tests.support.manifests import load
from tests.support.mcp import mcp_session

pytestmark = pytest.mark.django_db(transaction=True)

WHERE = {"story": "S-1", "domain": "seo", "project": "site"}
QUERIES: dict[str, dict[str, Any]] = {
    "over the old bound": {"query_text": "canonical tags " * 800},
    "about a megabyte": {"query_text": "x" * 1_000_000},
    "empty": {"query_text": ""},
    "missing": {},
    "null": {"query_text": None},
    "blank": {"query_text": " \n\t "},
    "invisible only": {"query_text": "\u200b\u2060\ufeff"},
}


@pytest.fixture
def vlevel_key(transactional_db, settings) -> str:
    settings.DEBUG = True
    settings.EMBEDDING_BACKEND = "hashing"
    settings.EMBEDDING_DIMENSION = 64
    return issue_key(agent=load("agent.seo.vlevel"))


def test_no_query_text_is_a_tool_error(live_server, vlevel_key):
    async def work(session: ClientSession) -> Any:
        return {name: await session.call_tool("get_injection_block", WHERE | query) for name, query in QUERIES.items()}

    results = mcp_session(live_server.url, vlevel_key, work)

    for name, result in results.items():
        assert not result.is_error, (name, result.content)
        block = result.structured_content
        assert [s["name"] for s in block["sections"]] == ["learnings", "veille", "clarifications"], name
        assert UNAVAILABLE not in block["markdown"], name


def test_a_missing_story_is_still_refused(live_server, vlevel_key):
    async def work(session: ClientSession) -> Any:
        return await session.call_tool("get_injection_block", {"domain": "seo", "project": "site", "query_text": ""})

    result = mcp_session(live_server.url, vlevel_key, work)

    assert result.is_error
    assert "story" in result.content[0].text
