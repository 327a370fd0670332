"""A person's memory is reached only by agents whose manifest enables long-term memory, only by
the agents an operator named when the subject is restricted, and every read is on record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM
from memory.models import EmotionEvent, Subject
from memory.subjects import documents as subject_documents
from memory.subjects import services as subjects
from tests.support.api import Api
from tests.support.keys import issue_key
from tests.support.manifests import load, manifest_text
from tests.support.refusals import nothing_written

ALICE = Path(subjects.__file__).resolve().parent / "fixtures" / "alice"
SEARCH = ("/memory/subjects/alice/search", {"q": "musique", "k": 3})
EMOTION = {"emotion": "neutre", "intensity": 0.5, "triggered_by": "user_message"}


@pytest.fixture
def alice(db) -> Subject:
    documents = {
        name: json.loads((ALICE / f"{name}.json").read_text(encoding="utf-8")) for name in subject_documents.DOCUMENTS
    }
    subjects.import_documents("alice", documents, actor=SYSTEM)
    return Subject.objects.get(key="alice")


@pytest.fixture
def no_long_term_api(client, db) -> Api:
    """Seed 001's example agent under another id, with long-term memory switched off."""
    from agents.manifest import read_text
    from agents.registry import load_manifest

    document = read_text(manifest_text("agent.seo.vlevel"))
    document = {
        **document,
        "id": "agent.seo.forgetful",
        "memory": {**document["memory"], "long_term": {"enabled": False}},
    }
    agent = load_manifest(document, actor=SYSTEM)[0].agent
    return Api(client, issue_key(agent=agent))


@pytest.fixture
def indexer_api(client, db) -> Api:
    return Api(client, issue_key(agent=load("agent.rag.indexer")))


@pytest.mark.django_db
def test_an_agent_without_long_term_memory_reaches_no_subject(no_long_term_api, alice):
    with nothing_written():
        responses = [
            no_long_term_api.get(*SEARCH),
            no_long_term_api.get("/memory/subjects/alice/system-prompt"),
            no_long_term_api.post("/memory/subjects/alice/emotions", EMOTION),
            no_long_term_api.post("/memory/subjects/alice/interactions", {"count": 1}),
            no_long_term_api.post("/memory/subjects/alice/facts", {"kind": "event", "values": {"event": "x"}}),
        ]

    assert [r.status_code for r in responses] == [403] * 5
    assert "memory.long_term" in responses[0].json()["detail"]


@pytest.mark.django_db
def test_an_agent_without_a_manifest_reaches_no_subject(agent_api, alice):
    assert agent_api.get("/memory/subjects/alice/system-prompt").status_code == 403


@pytest.mark.django_db
def test_a_restricted_subject_does_not_exist_for_the_other_agents(vlevel_api, indexer_api, admin_api, alice):
    restricted = admin_api.put("/memory/subjects/alice/agents", {"agents": ["agent.rag.indexer"]})
    assert restricted.status_code == 200
    assert restricted.json() == {"agents": ["agent.rag.indexer"]}

    with nothing_written():
        refused = [
            vlevel_api.get("/memory/subjects/alice/system-prompt"),
            vlevel_api.post("/memory/subjects/alice/emotions", EMOTION),
        ]

    assert [r.status_code for r in refused] == [404, 404]
    assert refused[0].json()["detail"] == "No subject 'alice'."  # word for word what an unknown subject gets
    assert indexer_api.get("/memory/subjects/alice/system-prompt").status_code == 200
    assert indexer_api.post("/memory/subjects/alice/emotions", EMOTION).status_code == 201
    assert EmotionEvent.objects.filter(subject=alice, emotion="neutre").exists()


@pytest.mark.django_db
def test_lifting_the_restriction_lets_every_long_term_agent_back(vlevel_api, admin_api, alice):
    admin_api.put("/memory/subjects/alice/agents", {"agents": ["agent.seo.vlevel"]})
    admin_api.put("/memory/subjects/alice/agents", {"agents": []})

    assert vlevel_api.get("/memory/subjects/alice/system-prompt").status_code == 200
    changes = AuditEvent.objects.filter(action="subject.access_restricted").order_by("pk")
    assert [e.data["after"] for e in changes] == [["agent.seo.vlevel"], []]
    assert {e.actor for e in changes} == {"user:alice"}


@pytest.mark.django_db
def test_restricting_to_an_unknown_agent_is_422_and_changes_nothing(admin_api, alice):
    with nothing_written():
        response = admin_api.put("/memory/subjects/alice/agents", {"agents": ["agent.ghost"]})

    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["body", "agents"]


@pytest.mark.django_db
def test_every_read_by_an_agent_is_recorded(vlevel_api, alice):
    vlevel_api.get(*SEARCH)
    vlevel_api.get("/memory/subjects/alice/system-prompt")

    reads = AuditEvent.objects.filter(action="subject.read", target_id=str(alice.pk)).order_by("pk")
    assert [(e.actor, e.data["purpose"]) for e in reads] == [
        ("agent:agent.seo.vlevel", "search"),
        ("agent:agent.seo.vlevel", "system-prompt"),
    ]


@pytest.mark.django_db
def test_a_viewer_cannot_restrict_a_subject(viewer_api, alice):
    with nothing_written():
        assert viewer_api.put("/memory/subjects/alice/agents", {"agents": []}).status_code == 403


@pytest.mark.django_db
def test_who_may_reach_a_subject_is_for_operators_to_read(vlevel, vlevel_api, outsider_api, viewer_api, alice):
    alice.allowed_agents.add(vlevel)

    assert vlevel_api.get("/memory/subjects/alice/agents").status_code == 403  # even an allowed agent
    assert outsider_api.get("/memory/subjects/alice/agents").status_code == 403
    assert viewer_api.get("/memory/subjects/alice/agents").json() == {"agents": ["agent.seo.vlevel"]}
