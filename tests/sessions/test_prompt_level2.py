"""Level 2 of a session's prompt (seed 003 section 10, "USER DATA"): the agent, its tools, its
manifest's invariants, the data its manifest marks always_send, and the step-0 memory block of the
story the session names (seed 004) — which never makes the prompt fail. Both levels fit the
manifest's memory.short_term.max_tokens, the least important chunks left out first."""

from __future__ import annotations

import pytest

from agents.manifest import read_text
from agents.registry import load_manifest
from governance.kernel.principals import SYSTEM
from memory import clarifications
from memory.models import LearningInjection
from sessions import hooks
from sessions.models import PromptChunk
from tests.memory.test_injection import learning
from tests.support.manifests import manifest_text

pytestmark = pytest.mark.django_db

STORY = {"story": "PD-42", "domain": "SEO", "project": "shop"}


def new_version(**changes) -> None:
    """A new version of agent.seo.vlevel's shipped manifest with ``changes`` at the top level."""
    document = read_text(manifest_text("agent.seo.vlevel"))
    document.update({"version": "1.7.0", **changes})
    load_manifest(document, actor=SYSTEM)


def chat(api, **body) -> str:
    created = api.post("/sessions", {"type": "CHAT", "name": "Audit the router pages", **body})
    assert created.status_code == 201, created.content
    return created.json()["sessionId"]


def level2(api, session_id: str) -> str:
    response = api.get(f"/sessions/{session_id}/prompt")
    assert response.status_code == 200, response.content
    return response.json()["level2Content"]


@pytest.fixture
def hashing_embeddings(settings):
    """The test-only hashing backend, as memory's own tests embed with."""
    settings.DEBUG = True
    settings.EMBEDDING_BACKEND = "hashing"
    settings.EMBEDDING_DIMENSION = 64


def test_another_agent_gets_no_prompt_and_no_memory(vlevel_api, other_agent_api):
    session_id = chat(vlevel_api, **STORY)

    assert other_agent_api.get(f"/sessions/{session_id}/prompt").status_code == 404
    assert not LearningInjection.objects.exists()


def test_level2_carries_the_agent_its_tools_and_its_invariants(vlevel_api):
    text = level2(vlevel_api, chat(vlevel_api))

    assert text.startswith("Agent agent.seo.vlevel")
    assert "## Invariants" in text
    assert "- No URL modification without feature flag" in text
    assert "- Router pages must not contain expert content" in text
    assert "## Memory" not in text  # the session names no story


def test_always_send_data_is_answered_at_each_call_as_the_agent_sees_it(vlevel_api):
    new_version(sessions={"always_send": [{"type": "MANIFEST"}, {"type": "mcp__chrome-devtools__list_pages"}]})
    session_id = chat(vlevel_api)

    text = level2(vlevel_api, session_id)

    assert "## Always-send data" in text
    assert '"id": "agent.seo.vlevel"' in text  # the active manifest, answered by the platform
    assert "- mcp__chrome-devtools__list_pages: your own tool's data" in text


def test_a_session_naming_a_story_carries_its_step0_block(vlevel_api, hashing_embeddings):
    clarifications.persist_clarifications(
        story="PD-41",
        domain="seo",
        project="shop",
        answers=["Only the home page", "No", "Yes", "Friday"],
        actor=SYSTEM,
    )
    served = learning("audit the router pages before the expert ones", story="PD-7", domain="seo")
    session_id = chat(vlevel_api, **STORY)

    text = level2(vlevel_api, session_id)

    assert "## Memory (step 0) for story PD-42" in text
    assert "Only the home page / No / Yes / Friday" in text  # clarifications of (seo, shop)
    assert "audit the router pages before the expert ones" in text
    injection = LearningInjection.objects.get()
    assert (injection.learning_id, injection.story, injection.domain, injection.project) == (
        served.pk,
        "PD-42",
        "seo",
        "shop",
    )


def test_the_block_is_recorded_once_a_session_however_often_the_prompt_is_rebuilt(vlevel_api, hashing_embeddings):
    learning("audit the router pages", story="PD-7", domain="seo")
    session_id = chat(vlevel_api, **STORY)

    for _ in range(3):
        assert "audit the router pages" in level2(vlevel_api, session_id)

    assert LearningInjection.objects.count() == 1


class BrokenMemory:
    def build_block(self, **kwargs: object) -> dict:
        raise RuntimeError("memory is down")


def test_memory_that_fails_never_fails_the_prompt(vlevel_api, monkeypatch):
    monkeypatch.setattr(hooks.SESSION_MEMORY, "_value", BrokenMemory())  # the provider itself is broken
    session_id = chat(vlevel_api, **STORY)

    text = level2(vlevel_api, session_id)

    assert "Memory is unavailable right now" in text
    assert "- No URL modification without feature flag" in text


def test_a_broken_embedding_backend_degrades_the_block_not_the_prompt(vlevel_api, settings):
    settings.EMBEDDING_BACKEND = "openai"
    settings.EMBEDDING_URL = "http://127.0.0.1:9/v1"  # nothing listens there
    session_id = chat(vlevel_api, **STORY)

    text = level2(vlevel_api, session_id)

    assert "## Memory (step 0) for story PD-42" in text
    assert "_source indisponible_" in text


def test_the_manifest_token_budget_drops_the_least_important_chunks_first(vlevel_api, hashing_embeddings):
    PromptChunk.objects.create(key="style", title="Style", body="Write short sentences. " * 200, importance=10)
    PromptChunk.objects.create(key="api", title="API", body="The data commands you may use.", importance=90)
    session_id = chat(vlevel_api, **STORY)
    roomy = vlevel_api.get(f"/sessions/{session_id}/prompt").json()
    assert "Write short sentences." in roomy["level1Content"]

    new_version(memory={"short_term": {"enabled": True, "max_tokens": 400}})
    tight = vlevel_api.get(f"/sessions/{session_id}/prompt").json()

    assert "Write short sentences." not in tight["level1Content"]  # importance 10: the first to go
    assert "The data commands you may use." in tight["level1Content"]
    assert "## Limits" in tight["level1Content"]  # required
    assert "- Router pages must not contain expert content" in tight["level2Content"]  # required


def test_without_a_manifest_budget_the_setting_applies(vlevel_api, settings):
    new_version(memory={"short_term": {"enabled": True}})  # seed 001's example sets 50000: not this one
    PromptChunk.objects.create(key="style", title="Style", body="Write short sentences. " * 200, importance=10)
    session_id = chat(vlevel_api)
    settings.SESSION_PROMPT_MAX_TOKENS = 300

    first = vlevel_api.get(f"/sessions/{session_id}/prompt").json()["level1Content"]

    assert "Write short sentences." not in first
    settings.SESSION_PROMPT_MAX_TOKENS = 100_000
    assert "Write short sentences." in vlevel_api.get(f"/sessions/{session_id}/prompt").json()["level1Content"]


def test_a_disabled_short_term_memory_leaves_the_budget_to_the_setting(vlevel_api, settings):
    new_version(memory={"short_term": {"enabled": False, "max_tokens": 400}})  # a window it does not use
    PromptChunk.objects.create(key="style", title="Style", body="Write short sentences. " * 200, importance=10)
    session_id = chat(vlevel_api)
    settings.SESSION_PROMPT_MAX_TOKENS = 100_000

    roomy = vlevel_api.get(f"/sessions/{session_id}/prompt").json()["level1Content"]
    new_version(version="1.8.0", memory={"short_term": {"enabled": True, "max_tokens": 400}})
    tight = vlevel_api.get(f"/sessions/{session_id}/prompt").json()["level1Content"]

    assert "Write short sentences." in roomy  # 400 tokens declared, but disabled: the setting's budget
    assert "Write short sentences." not in tight  # enabled: the manifest's 400 tokens


def test_each_run_of_an_automation_naming_a_story_carries_its_block(vlevel_api, hashing_embeddings):
    learning("audit the router pages", story="PD-7", domain="seo")
    created = vlevel_api.post(
        "/automations", {"name": "Nightly", "trigger": "MANUAL", "messages": [{"text": "audit"}], **STORY}
    )
    assert created.status_code == 201, created.content

    run = vlevel_api.post(f"/automations/{created.json()['id']}/execute").json()["sessionId"]

    state = vlevel_api.get(f"/sessions/{run}").json()
    assert (state["story"], state["domain"], state["project"]) == ("PD-42", "SEO", "shop")
    assert "## Memory (step 0) for story PD-42" in level2(vlevel_api, run)


def test_a_story_for_an_existing_seed_is_refused(vlevel_api):
    first = vlevel_api.post("/automations", {"name": "A", "trigger": "MANUAL", "messages": [{"text": "audit"}]})
    seed = first.json()["seedSessionId"]

    refused = vlevel_api.post("/automations", {"name": "B", "trigger": "MANUAL", "seedSessionId": seed, **STORY})

    assert refused.status_code == 422
    assert refused.json()["errors"][0]["loc"] == ["body", "story"]
