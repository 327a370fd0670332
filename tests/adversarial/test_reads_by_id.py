"""Every read that names an object in its path, by every caller: the object's reader gets it; an
agent that may not see it (another agent's job or session, a learning outside its manifest's
memory reach, a subject restricted to another agent) gets 404, word for word the answer for an
object that does not exist, so nothing of it leaks, not even that it exists; operators with the
view permission read everything, and an operator without it is refused (403) as before.

The fleet: agent.seo.vlevel (domain SEO, shared memory of seo only) owns the job, the session and
the subject; agent.rag.indexer (domain RAG, no shared memory) owns nothing of them. A new GET
endpoint with a parameter in its path fails `test_the_walk_covers_every_read_by_id` until it has
its row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from agents.manifest import read_text
from agents.models import Job
from agents.registry import load_manifest
from gateway.models import UpstreamServer
from governance.kernel.principals import SYSTEM, Principal
from memory import clarifications
from memory.models import Learning, Subject
from memory.subjects.access import restrict
from tests.factories.governance import ContractFactory, UserFactory
from tests.memory.test_injection import learning
from tests.support.api import Api
from tests.support.jobs import finish_job
from tests.support.keys import issue_key
from tests.support.manifests import manifest_text
from tests.support.refusals import last_audit_id, refusals_since
from tests.support.world import World

OWNER, OTHER, VIEWER, OUTSIDER = "seo agent (owner)", "rag agent", "viewer", "operator without permission"
QUERY = "retry the flaky deploy"
ABSENT_ID = 2_000_000_000
ABSENT_UUID = "00000000-0000-4000-8000-000000000000"


@dataclass
class Sight:
    """The world, plus what the walk reads: learnings of both domains, a finished job's artifacts,
    a story's clarifications, an approval request, and a Viewer."""

    world: World
    viewer: Api
    approval_id: int
    learnings: dict[str, int] = field(default_factory=dict)

    def api(self, caller: str) -> Api:
        return {OWNER: self.world.owner, OTHER: self.world.other, VIEWER: self.viewer, OUTSIDER: self.world.outsider}[
            caller
        ]


@dataclass(frozen=True)
class Read:
    """One read by id: its OpenAPI path, the parameters naming the object (and one that names
    nothing), and what each caller gets."""

    template: str
    params: Callable[[Sight], dict[str, Any]]
    absent: dict[str, Any]
    readers: tuple[str, ...]
    hidden: tuple[str, ...] = ()
    refused: tuple[str, ...] = (OUTSIDER,)
    label: str = ""

    def path(self, values: dict[str, Any]) -> str:
        return self.template.format(**values)


def learning_read(name: str, readers: tuple[str, ...], hidden: tuple[str, ...]) -> Read:
    return Read(
        "/memory/learnings/{learning_id}",
        lambda s: {"learning_id": s.learnings[name]},
        {"learning_id": ABSENT_ID},
        readers,
        hidden,
        label=name,
    )


def fixed(**values: Any) -> Callable[[Sight], dict[str, Any]]:
    return lambda sight: values


VLEVEL = fixed(agent_id="agent.seo.vlevel")
NO_AGENT = {"agent_id": "agent.seo.nobody"}
JOB = lambda s: {"job_id": s.world.job_id, "kind": "audit"}  # noqa: E731
SESSION = lambda s: {"session_id": s.world.session_id}  # noqa: E731
ALICE = fixed(subject="alice")
NO_SUBJECT = {"subject": "bob"}
CONTRACT = fixed(name="retrieval_answer")

READS = [
    Read("/agents/{agent_id}", VLEVEL, NO_AGENT, (OWNER, VIEWER), (OTHER,)),
    Read("/agents/{agent_id}/manifest", VLEVEL, NO_AGENT, (OWNER, VIEWER), (OTHER,)),
    Read("/agents/{agent_id}/kpis", VLEVEL, NO_AGENT, (OWNER, VIEWER), (OTHER,)),
    # An approval request is its agent's: operators decide it in the inbox.
    Read(
        "/approvals/{approval_id}",
        lambda s: {"approval_id": s.approval_id},
        {"approval_id": ABSENT_ID},
        (OWNER,),
        (OTHER,),
        (VIEWER, OUTSIDER),
    ),
    Read("/jobs/{job_id}", JOB, {"job_id": ABSENT_UUID}, (OWNER, VIEWER), (OTHER,)),
    Read("/jobs/{job_id}/artifacts/{kind}", JOB, {"job_id": ABSENT_UUID}, (OWNER, VIEWER), (OTHER,)),
    Read("/sessions/{session_id}", SESSION, {"session_id": ABSENT_UUID}, (OWNER, VIEWER), (OTHER,)),
    Read("/sessions/{session_id}/messages", SESSION, {"session_id": ABSENT_UUID}, (OWNER, VIEWER), (OTHER,)),
    # The prompt is the owner agent's working text: operators read the session and its messages.
    Read("/sessions/{session_id}/prompt", SESSION, {"session_id": ABSENT_UUID}, (OWNER,), (OTHER,), (VIEWER, OUTSIDER)),
    # The indexer (rag) has no shared memory: no seo learning, whatever its scope. vlevel shares
    # seo only: a rag learning is out of its reach, promoted or not.
    learning_read("seo story", (OWNER, VIEWER), (OTHER,)),
    learning_read("seo global", (OWNER, VIEWER), (OTHER,)),
    learning_read("rag story", (OTHER, VIEWER), (OWNER,)),
    learning_read("rag domain", (OTHER, VIEWER), (OWNER,)),
    # Clarifications are the fleet's, as in memory search and the step-0 block (the block's domain
    # names them): every agent reads them.
    Read(
        "/memory/clarifications/{story}/markdown",
        fixed(story="PD-201"),
        {"story": "PD-999"},
        (OWNER, OTHER, VIEWER),
    ),
    # alice is restricted to vlevel: to the indexer, she does not exist.
    Read("/memory/subjects/{subject}/search?q=tea", ALICE, NO_SUBJECT, (OWNER, VIEWER), (OTHER,)),
    Read("/memory/subjects/{subject}/system-prompt", ALICE, NO_SUBJECT, (OWNER,), (OTHER,), (VIEWER, OUTSIDER)),
    Read("/memory/subjects/{subject}/export", ALICE, NO_SUBJECT, (VIEWER,), (), (OWNER, OTHER, OUTSIDER)),
    Read("/memory/subjects/{subject}/agents", ALICE, NO_SUBJECT, (VIEWER,), (), (OWNER, OTHER, OUTSIDER)),
    # The contract catalog is the fleet's; its statistics are the operators'.
    Read("/contracts/{name}", CONTRACT, {"name": "no_such_contract"}, (OWNER, OTHER, VIEWER)),
    Read("/contracts/{name}/stats", CONTRACT, {"name": "no_such_contract"}, (VIEWER,), (), (OWNER, OTHER, OUTSIDER)),
    # Upstream MCP servers are the operators' configuration: no agent reads them, not even by name.
    Read("/gateway/upstreams/{name}", fixed(name="crm"), {"name": "nobody"}, (VIEWER,), (), (OWNER, OTHER, OUTSIDER)),
]


def case_id(read: Read, caller: str) -> str:
    return f"GET {read.template}{f' ({read.label})' if read.label else ''} by {caller}"


CASES = [
    pytest.param(read, caller, expected, id=case_id(read, caller))
    for read in READS
    for expected, callers in ((200, read.readers), (404, read.hidden), (403, read.refused))
    for caller in callers
]


@pytest.fixture
def sight(world, client, settings) -> Sight:
    settings.DEBUG = True  # the hashing embedder (tests only) answers the subject search
    settings.EMBEDDING_BACKEND = "hashing"
    settings.EMBEDDING_DIMENSION = 64
    made = {
        "seo story": learning(f"{QUERY} in a seo story", story="PD-201", domain="seo"),
        "seo global": learning(f"{QUERY} everywhere", story="PD-202", domain="seo", scope="global"),
        "rag story": learning(f"{QUERY} in a rag story", story="PD-221", domain="rag"),
        "rag domain": learning(f"{QUERY} across rag", story="PD-222", domain="rag", scope="domain"),
    }
    clarifications.persist_clarifications(
        story="PD-201", domain="seo", project="shop", answers=list("abcd"), actor=SYSTEM
    )
    broken = {"scores": [{"url": "not a url", "level": "V9"}], "recommendations": []}  # fails at once: artifacts
    assert finish_job(Job.objects.get(pk=world.job_id), {"success": True, "data": broken}).finished_at is not None
    ContractFactory(name="retrieval_answer")
    UpstreamServer.objects.create(name="crm", url="http://10.0.0.5:8080/mcp", internal=True)
    admin = Principal(user=UserFactory.create(username="ada", roles=["Admin"]))
    restrict(Subject.objects.get(key="alice"), ["agent.seo.vlevel"], actor=admin)
    approval = world.owner.post("/approvals", {"action": "purge the cache", "reason": "stale prices"})
    assert approval.status_code == 202, approval.content
    viewer = Api(client, issue_key(user=UserFactory.create(username="victor", roles=["Viewer"])))
    return Sight(world, viewer, approval.json()["approvalId"], {name: item.pk for name, item in made.items()})


def normalised(response: Any, absent: dict[str, Any], present: dict[str, Any]) -> str:
    """The answer's text with the absent object's name replaced by the present one's."""
    text = response.content.decode()
    for name, value in absent.items():
        text = text.replace(str(value), str(present[name]))
    return text


@pytest.mark.django_db
@pytest.mark.parametrize(("read", "caller", "expected"), CASES)
def test_a_read_by_id_answers_each_caller_and_hides_what_it_may_not_see(sight, read, caller, expected):
    api = sight.api(caller)
    present = read.params(sight)

    response = api.get(read.path(present))

    assert response.status_code == expected, response.content
    if expected != 404:
        return
    assert response["Content-Type"] == "application/problem+json"
    missing = api.get(read.path({**present, **read.absent}))
    assert missing.status_code == 404, missing.content
    assert normalised(missing, read.absent, present) == response.content.decode()  # not one byte of difference


@pytest.mark.django_db
def test_the_walk_covers_every_read_by_id(client):
    document = client.get("/api/v1/openapi.json").json()
    reads = {
        path.removeprefix("/api/v1")
        for path, operations in document["paths"].items()
        if "get" in operations and "{" in path
    }
    walked = {read.template.split("?")[0] for read in READS}
    assert reads - walked == set(), "reads by id without a row in the walk"


# The reach by id is the reach of the search and of the step-0 block: one rule, three readers.

LEARNINGS = {
    "seo story": ("seo", "story"),
    "seo domain": ("seo", "domain"),
    "seo archived": ("seo", "archived"),
    "rag story": ("rag", "story"),
    "rag domain": ("rag", "domain"),
    "rag archived": ("rag", "archived"),
    "checkout global": ("checkout", "global"),
}
BLOCK = {"story": "PD-99", "domain": "seo", "project": "shop"}
MEMORIES = {
    "shared off": {"shared": {"enabled": False}},
    "shared rag": {"shared": {"enabled": True, "namespaces": ["rag:index"]}},
    "shared everywhere": {"shared": {"enabled": True, "namespaces": []}},
    "no long-term memory": {"long_term": {"enabled": False}},
}


def seo_agent(client, agent_id: str, memory: dict[str, Any]) -> Api:
    """Seed 001's example agent (domain seo) under another id, with its memory section changed."""
    document = read_text(manifest_text("agent.seo.vlevel"))
    document = {**document, "id": agent_id, "memory": {**document["memory"], **memory}}
    return Api(client, issue_key(agent=load_manifest(document, actor=SYSTEM)[0].agent))


@pytest.mark.django_db
@pytest.mark.parametrize("memory", MEMORIES)
def test_an_agent_reads_by_id_the_live_learnings_its_search_and_block_serve(client, settings, memory):
    settings.DEBUG = True
    settings.EMBEDDING_BACKEND = "hashing"
    settings.EMBEDDING_DIMENSION = 64
    made = {
        name: learning(f"{QUERY}: {name}", story=f"PD-{n}", domain=domain, scope=scope)
        for n, (name, (domain, scope)) in enumerate(LEARNINGS.items())
    }
    api = seo_agent(client, "agent.seo.probe", MEMORIES[memory])

    readable = {name for name, item in made.items() if api.get(f"/memory/learnings/{item.pk}").status_code == 200}
    search = api.get("/memory/search", {"q": QUERY, "k": 20})
    block = api.post(
        "/memory/injection-block", {"story": "PD-99", "domain": "seo", "project": "shop", "query_text": QUERY}
    )

    live = {name for name in readable if made[name].scope != Learning.Scope.ARCHIVED}
    by_text = {item.text: name for name, item in made.items()}
    found = {by_text[hit["text"]] for hit in search.json()} if search.status_code == 200 else set()
    served = {by_text[item["text"]] for item in block.json()["sections"][0]["items"]}
    assert found == live
    assert served <= live
    assert len(served) == min(len(live), 5)
    expected = {
        "shared off": {"seo story", "seo domain", "seo archived"},
        "shared rag": {"seo story", "seo domain", "seo archived", "rag domain"},
        "shared everywhere": {"seo story", "seo domain", "seo archived", "rag domain", "checkout global"},
        "no long-term memory": set(),
    }[memory]
    assert readable == expected
    for name in set(made) - readable:
        answer = api.get(f"/memory/learnings/{made[name].pk}")
        assert answer.status_code == 404
        assert answer.json()["detail"] == f"No learning {made[name].pk}."


@pytest.mark.django_db
def test_a_hidden_read_is_audited_as_a_refusal_and_a_missing_one_is_not(world):
    """The agent is told nothing (404 either way); the audit trail keeps the attempt on what
    exists, as it keeps every other refusal of a key of ours."""
    seo = learning("seo, story scope", story="PD-301", domain="seo")
    before = last_audit_id()

    hidden = [world.other.get(f"/jobs/{world.job_id}"), world.other.get(f"/memory/learnings/{seo.pk}")]
    missing = [world.other.get("/jobs/00000000-0000-4000-8000-000000000000"), world.other.get("/memory/learnings/0")]

    assert [response.status_code for response in hidden + missing] == [404] * 4
    refusals = refusals_since(before)
    assert [(row.target_id, row.data["status"]) for row in refusals] == [
        (f"GET /api/v1/jobs/{world.job_id}", 404),
        (f"GET /api/v1/memory/learnings/{seo.pk}", 404),
    ]
    assert {row.actor for row in refusals} == {"agent:agent.rag.indexer"}
