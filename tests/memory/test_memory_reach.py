"""An agent reads the learnings its manifest's memory reaches (seed 001's `memory` section):
its own domain, the shared learnings of the namespaces it lists when shared memory is on, and
nothing without long-term memory; in its step-0 block and in memory search alike. Operators
read everything."""

from __future__ import annotations

import pytest

from agents.manifest import read_text
from agents.registry import load_manifest
from governance.kernel.principals import SYSTEM
from memory.injection import DISABLED
from memory.reach import Reach, from_memory
from tests.memory.test_injection import learning, note
from tests.support.api import Api
from tests.support.keys import issue_key
from tests.support.manifests import load, manifest_text

pytestmark = pytest.mark.django_db

QUERY = "retry the flaky deploy"
BLOCK = {"story": "PD-9", "domain": "seo", "project": "shop", "query_text": QUERY}


@pytest.fixture(autouse=True)
def hashing_embeddings(settings):
    """The hashing backend the helpers embed with answers the API's queries too."""
    settings.DEBUG = True
    settings.EMBEDDING_BACKEND = "hashing"
    settings.EMBEDDING_DIMENSION = 64


def seo_agent(client, agent_id: str, **memory) -> Api:
    """Seed 001's example agent (domain seo) under another id, with its memory section changed."""
    document = read_text(manifest_text("agent.seo.vlevel"))
    document = {**document, "id": agent_id, "memory": {**document["memory"], **memory}}
    return Api(client, issue_key(agent=load_manifest(document, actor=SYSTEM)[0].agent))


def served(api: Api) -> set[str]:
    response = api.post("/memory/injection-block", BLOCK)
    assert response.status_code == 200, response.content
    learnings = next(s for s in response.json()["sections"] if s["name"] == "learnings")
    return {item["text"] for item in learnings["items"]}


def found(api: Api) -> set[str]:
    response = api.get("/memory/search", {"q": QUERY, "k": 10})
    assert response.status_code == 200, response.content
    return {hit["text"] for hit in response.json()}


@pytest.fixture
def fleet_memory() -> None:
    learning(f"{QUERY} in seo", story="PD-1", domain="seo")
    learning(f"{QUERY} globally", story="PD-2", domain="checkout", scope="global")
    learning(f"{QUERY} for rag", story="PD-3", domain="rag", scope="domain")
    learning(f"{QUERY} in a rag story", story="PD-4", domain="rag")


def test_without_shared_memory_another_domains_global_learning_is_neither_served_nor_found(client, fleet_memory):
    alone = seo_agent(client, "agent.seo.alone", shared={"enabled": False})

    assert served(alone) == {f"{QUERY} in seo"}
    assert found(alone) == {f"{QUERY} in seo"}


def test_asking_for_another_domain_does_not_widen_what_an_agent_reads(client, fleet_memory):
    alone = seo_agent(client, "agent.seo.alone", shared={"enabled": False})

    block = alone.post("/memory/injection-block", {**BLOCK, "domain": "rag"}).json()
    search = alone.get("/memory/search", {"q": QUERY, "domain": "rag"}).json()

    learnings = next(s for s in block["sections"] if s["name"] == "learnings")["items"]
    assert {item["domain"] for item in learnings} == {"seo"}  # its own: the block's domain names clarifications
    assert search == []  # a rag-only search finds nothing it may read


def test_namespaces_open_the_shared_learnings_of_the_listed_domains_only(client, fleet_memory):
    reader = seo_agent(client, "agent.seo.reader", shared={"enabled": True, "namespaces": ["rag:index"]})

    expected = {f"{QUERY} in seo", f"{QUERY} for rag"}  # not checkout's, not a rag story's own learning
    assert served(reader) == expected
    assert found(reader) == expected


def test_shared_memory_without_namespaces_opens_every_domains_shared_learnings(client, fleet_memory):
    open_api = seo_agent(client, "agent.seo.open", shared={"enabled": True, "namespaces": []})

    assert served(open_api) == {f"{QUERY} in seo", f"{QUERY} globally", f"{QUERY} for rag"}


def test_without_long_term_memory_the_block_says_so_and_learnings_are_not_searched(client, fleet_memory):
    note("Deploys", f"{QUERY} today", "fort")
    forgetful = seo_agent(client, "agent.seo.forgetful", long_term={"enabled": False})

    block = forgetful.post("/memory/injection-block", BLOCK).json()
    search = forgetful.get("/memory/search", {"q": QUERY})

    assert [s["status"] for s in block["sections"]] == ["disabled", "ok", "empty"]
    assert DISABLED in block["markdown"]
    assert search.status_code == 403
    assert "memory.long_term" in search.json()["detail"]
    assert forgetful.get("/memory/search", {"q": QUERY, "kind": "veille"}).status_code == 200


def test_the_shipped_manifests_read_their_own_domain_and_operators_everything(client, viewer_api, fleet_memory):
    vlevel = Api(client, issue_key(agent=load("agent.seo.vlevel")))
    indexer = Api(client, issue_key(agent=load("agent.rag.indexer")))

    assert served(vlevel) == {f"{QUERY} in seo"}  # its namespaces (seo:scores, seo:audit) are its own domain
    assert found(indexer) == {f"{QUERY} for rag", f"{QUERY} in a rag story"}  # it declares no shared memory
    assert len(found(viewer_api)) == 4


def test_a_namespace_names_its_domain_and_an_omitted_section_shares_nothing():
    vlevel = read_text(manifest_text("agent.seo.vlevel"))["memory"]

    assert from_memory(vlevel, "seo") == Reach(long_term=True, own="seo", shared=True, shared_domains=("seo",))
    assert from_memory({}, "RAG") == Reach(long_term=False, own="rag", shared=False, shared_domains=None)
