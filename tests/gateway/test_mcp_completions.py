"""/mcp completes prompt and resource-template arguments from the caller's own sessions only, and
accepts a logging level: both capabilities declared, with the SDK's own client over real HTTP."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INVALID_PARAMS

from agents.models import Agent
from governance.kernel.principals import Principal
from sessions import scheduler
from sessions.models import AISession
from tests.support.keys import issue_key
from tests.support.manifests import load
from tests.support.mcp import mcp_session

pytestmark = pytest.mark.django_db(transaction=True)

PROMPT = types.PromptReference(name="session_level1")
TEMPLATE = types.ResourceTemplateReference(uri="governance://injection-block/{domain}/{project}/{story}")


def chat(agent: Agent, *, story: str = "", domain: str = "", project: str = "") -> AISession:
    """A session of ``agent`` working on ``story`` (its step-0 block's story, domain and project)."""
    session = scheduler.start_chat(agent, actor=Principal(agent=agent), name="chat", require_validation=False)
    AISession.objects.filter(pk=session.pk).update(story=story, domain=domain, project=project)
    return session


@pytest.fixture
def vlevel(transactional_db) -> Agent:
    return load("agent.seo.vlevel")


@pytest.fixture
def architect(transactional_db) -> Agent:
    return load("agent.seo.architect")


def complete(url: str, key: str, ref: Any, name: str, value: str, given: dict[str, str] | None = None) -> Any:
    async def work(session: ClientSession) -> Any:
        return (await session.complete(ref, {"name": name, "value": value}, given)).completion

    return mcp_session(url, key, work)


def test_an_agent_completes_its_own_session_ids_and_never_another_agents(live_server, vlevel, architect):
    mine = chat(vlevel)
    theirs = chat(architect)
    key = issue_key(agent=vlevel)

    everything = complete(live_server.url, key, PROMPT, "sessionId", "")
    by_prefix = complete(live_server.url, key, PROMPT, "sessionId", str(mine.pk)[:8])
    probed = complete(live_server.url, key, PROMPT, "sessionId", str(theirs.pk)[:8])

    assert everything.values == [str(mine.pk)]
    assert (everything.total, everything.has_more) == (1, False)
    assert by_prefix.values == [str(mine.pk)]
    assert probed.values == []  # another agent's session is one that does not exist
    assert probed.total == 0


def test_the_injection_template_completes_the_stories_of_the_callers_own_sessions(live_server, vlevel, architect):
    chat(vlevel, story="S-12", domain="seo", project="site")
    chat(vlevel, story="S-13", domain="seo", project="blog")
    chat(vlevel, story="T-1", domain="ads", project="site")
    chat(architect, story="S-99", domain="seo", project="site")
    key = issue_key(agent=vlevel)

    stories = complete(live_server.url, key, TEMPLATE, "story", "S-")
    in_blog = complete(live_server.url, key, TEMPLATE, "story", "", {"domain": "seo", "project": "blog"})
    domains = complete(live_server.url, key, TEMPLATE, "domain", "")

    assert stories.values == ["S-12", "S-13"]  # S-99 is the architect's
    assert in_blog.values == ["S-13"]
    assert domains.values == ["ads", "seo"]


def test_an_operator_without_the_permission_to_view_sessions_completes_nothing(live_server, vlevel, outsider):
    chat(vlevel, story="S-12")

    sessions = complete(live_server.url, issue_key(user=outsider), PROMPT, "sessionId", "")
    stories = complete(live_server.url, issue_key(user=outsider), TEMPLATE, "story", "")

    assert (sessions.values, stories.values) == ([], [])


@pytest.mark.parametrize(
    ("ref", "name", "value"),
    [
        (types.PromptReference(name="test_prompt_with_arguments"), "arg1", "test"),  # not a prompt of ours
        (PROMPT, "story", ""),  # not an argument of that prompt
        (types.ResourceTemplateReference(uri="governance://elsewhere/{story}"), "story", ""),
        (PROMPT, "sessionId", "ab\x00cd"),  # PostgreSQL refuses NUL: nothing to complete, not a failure
    ],
)
def test_what_names_nothing_completes_to_nothing(live_server, vlevel, ref, name, value):
    chat(vlevel, story="S-12")

    completion = complete(live_server.url, issue_key(agent=vlevel), ref, name, value)

    assert (completion.values, completion.total, completion.has_more) == ([], 0, False)


def test_completions_and_logging_are_declared_and_a_level_is_accepted(live_server, vlevel):
    unknown: Any = "loud"  # past the client's own check, as a hand-written client would send it

    async def work(session: ClientSession) -> Any:
        accepted = await session.set_logging_level("warning")
        try:
            await session.send_request(
                types.SetLevelRequest(params=types.SetLevelRequestParams.model_construct(level=unknown)),
                types.EmptyResult,
            )
        except MCPError as exc:
            return session.server_capabilities, accepted, exc.error.code
        return session.server_capabilities, accepted, None

    capabilities, accepted, refused = mcp_session(live_server.url, issue_key(agent=vlevel), work)

    assert capabilities.completions is not None
    assert capabilities.logging is not None
    assert accepted == types.EmptyResult()
    assert refused == INVALID_PARAMS  # a level that is none of the eight is refused by name
