"""RAG FOURNIT (seed 001): a job's first lease fills its GraphState's ragContext from the step-0
block (seed 004), kept with the job so the audit shows what the agent was told; a job's result
naming a gate verdict feeds the reuse scores."""

from __future__ import annotations

import json
from datetime import date

import pytest

from agents.models import Job
from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM
from memory import clarifications, indexing
from memory.models import GateResult, LearningInjection
from memory.rag import rag_context
from tests.factories.memory import LearningFactory
from tests.support.api import Api
from tests.support.keys import issue_key

pytestmark = pytest.mark.django_db

ANSWERS = ["Keep the canonical on the product page.", "No.", "Monthly.", "The SEO lead."]


def learning(text: str, *, scope: str = "story", story: str = "PD-7") -> int:
    item = LearningFactory.create(story=story, domain="seo", scope=scope, text=text, date_created=date(2026, 1, 1))
    indexing.embed("learning", [item.pk])  # the configured (local) model: what the lease searches with
    return item.pk


def submit(api, **envelope) -> dict:
    body = {
        "intent": "seo_audit",
        "scope": {"entityType": "page"},
        "payload": {"urls": ["https://shop.test/p/canonical-tags"]},
        "context": {"source": "manual"},
        **envelope,
    }
    response = api.post("/jobs", body)
    assert response.status_code == 201, response.content
    return response.json()


def test_the_first_lease_gives_the_job_its_step_0_block_as_rag_context(vlevel_api, vlevel):
    canonical = learning("Canonical tags must point at the preferred product URL", scope="domain")
    learning("Sourdough needs a long cold proof before baking")
    clarifications.persist_clarifications(story="PD-7", domain="seo", project="page", answers=ANSWERS, actor=SYSTEM)
    job = submit(vlevel_api)

    leased = vlevel_api.post(f"/jobs/{job['jobId']}/lease", {"owner": "worker-1"}).json()
    shown = vlevel_api.get(f"/jobs/{job['jobId']}").json()["graphState"]["ragContext"]

    rag = leased["graphState"]["ragContext"]
    assert rag == shown  # kept with the job
    assert rag["documents"][0]["id"] == f"learning:{canonical}"  # nearest in meaning first
    assert rag["documents"][0]["score"] > rag["documents"][1]["score"]
    kinds = {doc["kind"] for doc in rag["documents"]}
    assert kinds == {"learning", "clarification"}
    assert [c["documentId"] for c in rag["citations"]] == [doc["id"] for doc in rag["documents"]]
    assert rag["truthLevel"] == "L1"  # a person's verbatim answer is among them
    assert 0 < rag["confidence"] <= 1
    assert (rag["searchMethod"], rag["indexVersion"]) == ("hybrid", "all-MiniLM-L6-v2")
    assert rag["injectionBlock"].startswith("## Learnings")
    served = LearningInjection.objects.filter(learning_id=canonical).get()
    assert (served.story, served.domain, served.project) == (job["jobId"], "seo", "page")
    assert served.served_to == "agent:agent.seo.vlevel"


def test_the_rag_context_is_built_once_and_kept_across_attempts(vlevel_api, vlevel):
    learning("Canonical tags must point at the preferred product URL")
    job = submit(vlevel_api, context={"source": "manual", "ragVersion": "2026.01.0"})
    url = f"/jobs/{job['jobId']}/lease"

    first = vlevel_api.post(url, {"owner": "worker-1"}).json()["graphState"]["ragContext"]
    learning("A newer learning about canonical tags and product URLs")
    Job.objects.update(lease_expires_at="2000-01-01T00:00:00Z")
    second = vlevel_api.post(url, {"owner": "worker-2"}).json()

    assert second["lease"]["attempts"] == 2
    assert second["graphState"]["ragContext"] == first
    assert first["indexVersion"] == "2026.01.0"  # the job's own ragVersion wins
    assert LearningInjection.objects.count() == 1  # served once, at the first lease


def test_a_lease_with_the_embedder_down_still_starts_with_what_it_can_tell(vlevel_api, vlevel, settings):
    settings.EMBEDDING_BACKEND = "ollama"
    settings.EMBEDDING_URL = "http://127.0.0.1:1"
    settings.EMBEDDING_TIMEOUT_SECONDS = 1
    job = submit(vlevel_api)

    leased = vlevel_api.post(f"/jobs/{job['jobId']}/lease", {"owner": "worker-1"})

    assert leased.status_code == 200
    rag = leased.json()["graphState"]["ragContext"]
    assert rag["sections"] == {"learnings": "unavailable", "veille": "unavailable", "clarifications": "empty"}
    assert (rag["documents"], rag["truthLevel"], rag["confidence"]) == ([], "L4", 0.0)


def test_a_job_not_yet_leased_has_no_rag_context_and_another_agent_builds_none(vlevel_api, architect, client):
    architect_api = Api(client, issue_key(agent=architect))
    job = submit(vlevel_api)

    assert vlevel_api.get(f"/jobs/{job['jobId']}").json()["graphState"]["ragContext"] is None
    assert architect_api.post(f"/jobs/{job['jobId']}/lease", {"owner": "thief"}).status_code in (403, 404)
    assert not LearningInjection.objects.exists()


@pytest.mark.parametrize(
    ("sections", "level"),
    [
        ({"learnings": [{"scope": "global"}]}, "L2"),
        ({"learnings": [{"scope": "story"}], "veille": [{}]}, "L3"),
        ({}, "L4"),
    ],
)
def test_the_truth_level_is_the_strongest_source_present(sections, level):
    learning_item = {"id": 1, "text": "t", "similarity": 0.5, "story": "PD-1", "gate": 8, "domain": "seo", "tags": []}
    note = {"id": 2, "title": "n", "summary": "s", "similarity": 0.25, "date": "2026-01-01", "impact_pv": "fort"}
    note["verdict_veille"] = "a_tester"
    block = {
        "markdown": "",
        "sections": [
            {"name": "learnings", "status": "ok", "items": [learning_item | i for i in sections.get("learnings", [])]},
            {"name": "veille", "status": "ok", "items": [note | i for i in sections.get("veille", [])]},
            {"name": "clarifications", "status": "empty", "items": []},
        ],
    }

    rag = rag_context(block, index_version="m")

    assert rag["truthLevel"] == level
    assert rag["confidence"] == (0.375 if "veille" in sections else 0.5 if sections else 0.0)


def result(**data) -> dict:
    scores = [{"url": "https://shop.test/p/canonical-tags", "level": "V2"}]
    return {"success": True, "data": {"scores": scores, "recommendations": [], **data}, "confidence": 0.9}


def test_a_result_naming_a_gate_verdict_records_it_for_the_jobs_story(vlevel_api, vlevel):
    job = submit(vlevel_api, payload={"urls": ["https://shop.test/p/canonical-tags"], "story": "PD-295"})
    vlevel_api.post(f"/jobs/{job['jobId']}/lease", {"owner": "worker-1"})

    answer = vlevel_api.post(
        f"/jobs/{job['jobId']}/result", result(gate=8, verdict="GO"), HTTP_X_LEASE_OWNER="worker-1"
    )

    assert answer.status_code == 200, answer.content
    recorded = GateResult.objects.get()
    assert (recorded.story, recorded.gate, recorded.verdict) == ("PD-295", 8, "GO")
    assert AuditEvent.objects.filter(action="gate_result.recorded", actor="agent:agent.seo.vlevel").exists()


@pytest.mark.parametrize(
    ("data", "loc"),
    [({"gate": "eight", "verdict": "GO"}, ["body", "data", "gate"]), ({"gate": 8}, ["body", "data", "verdict"])],
)
def test_a_malformed_gate_verdict_refuses_the_result_and_writes_nothing(vlevel_api, vlevel, data, loc):
    job = submit(vlevel_api)
    vlevel_api.post(f"/jobs/{job['jobId']}/lease", {"owner": "worker-1"})

    answer = vlevel_api.post(f"/jobs/{job['jobId']}/result", result(**data), HTTP_X_LEASE_OWNER="worker-1")

    assert answer.status_code == 422
    assert [error["loc"] for error in answer.json()["errors"]] == [loc]
    assert Job.objects.get().status == Job.Status.RUNNING
    assert not GateResult.objects.exists()


@pytest.mark.parametrize("call", ["erase", "redact"])
def test_an_erased_or_redacted_memory_row_leaves_no_words_in_the_jobs_that_were_told_it(
    vlevel_api, vlevel, admin_operator, call
):
    from governance.kernel.principals import Principal
    from memory import privacy
    from memory.models import Clarification

    secret = "Ask Jeanne Dupont at jeanne@example.com before changing canonical tags"
    kept = "Canonical tags must point at the preferred product URL"
    told = learning(secret)
    learning(kept)
    clarifications.persist_clarifications(story="PD-7", domain="seo", project="page", answers=ANSWERS, actor=SYSTEM)
    job = submit(vlevel_api)
    vlevel_api.post(f"/jobs/{job['jobId']}/lease", {"owner": "worker-1"})
    before = Job.objects.get(pk=job["jobId"]).rag_context
    assert secret in before["injectionBlock"]

    operator = Principal(user=admin_operator)
    getattr(privacy, call)("learning", told, actor=operator)
    first = Clarification.objects.get(story="PD-7", question_idx=1)
    getattr(privacy, call)("clarification", first.pk, actor=operator)

    after = Job.objects.get(pk=job["jobId"]).rag_context
    text = json.dumps(after)
    assert secret not in text
    assert ANSWERS[0] not in text
    assert kept in after["injectionBlock"]  # the rest of what the agent was told stays
    assert all(answer in text for answer in ANSWERS[1:])
    (redacted,) = [doc for doc in after["documents"] if doc["id"] == f"learning:{told}"]
    assert redacted["content"] == "[redacted]"
    assert after["documents"] != before["documents"]
