"""POST /api/v1/jobs and GET /api/v1/jobs/{jobId}: envelopes, defaults, R1, idempotency."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agents.models import IdempotencyKey, Job
from tests.support.api import Api
from tests.support.keys import issue_key
from tests.support.manifests import load

URLS = ["https://example.com/a", "https://example.com/b"]


def envelope(**changes) -> dict:
    body = {
        "intent": "seo_audit",
        "scope": {"entityType": "page", "entityIds": ["p1", "p2"]},
        "payload": {"urls": URLS, "depth": 2},
        "context": {"source": "cron"},
    }
    body.update(changes)
    return body


@pytest.mark.django_db
def test_a_job_is_created_with_the_seed_defaults(vlevel_api):
    response = vlevel_api.post("/jobs", envelope())

    assert response.status_code == 201
    job = response.json()
    assert job["status"] == "queued"
    assert job["agentId"] == "agent.seo.vlevel"
    assert job["scope"]["limit"] == 1000
    assert job["constraints"] == {"maxTokens": 4000, "maxDocs": 10, "timeout": 300000, "budget": None, "dryRun": False}
    assert job["context"]["priority"] == "normal"
    assert job["graphState"]["currentNode"] == "start"
    assert job["graphState"]["budget"]["tokensRemaining"] == 4000
    assert job["idempotencyKey"].startswith("idem_")
    assert job["preConditions"][0] == {
        "expression": "urls.length > 0 && urls.length <= 1000",
        "error_code": "INVALID_URL_COUNT",
        "passed": True,
        "error": None,
    }
    assert vlevel_api.get(f"/jobs/{job['jobId']}").json()["jobId"] == job["jobId"]


@pytest.mark.django_db
def test_client_ids_are_kept(vlevel_api):
    ids = {"jobId": "3f1c4a52-6a1e-4b61-9d0e-0f2b1f7d9a11", "traceId": "7d8e9f00-1111-4222-8333-444455556666"}
    job = vlevel_api.post("/jobs", envelope(**ids)).json()
    assert (job["jobId"], job["traceId"]) == (ids["jobId"], ids["traceId"])


@pytest.mark.django_db
def test_r1_an_agent_without_an_active_manifest_gets_403(agent_api):
    response = agent_api.post("/jobs", envelope())
    assert response.status_code == 403
    assert "R1" in response.json()["detail"]
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_an_intent_outside_the_manifest_list_gets_403(client, db):
    indexer = Api(client, issue_key(agent=load("agent.rag.indexer")))
    body = envelope(intent="seo_audit", payload={"documents": [{"id": 1}]})

    assert indexer.post("/jobs", body).status_code == 403
    assert indexer.post("/jobs", {**body, "intent": "rag_reindex"}).status_code == 201


@pytest.mark.django_db
def test_operators_do_not_submit_jobs(admin_api, vlevel):
    assert admin_api.post("/jobs", envelope()).status_code == 403


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "loc"),
    [
        ({"intent": "world_domination"}, ["body", "intent"]),
        ({"scope": {"entityType": "planet"}}, ["body", "scope", "entityType"]),
        ({"scope": {"entityType": "page", "limit": 10001}}, ["body", "scope", "limit"]),
        ({"context": {}}, ["body", "context", "source"]),
        ({"context": {"source": "cron", "priority": "urgent"}}, ["body", "context", "priority"]),
        ({"constraints": {"maxTokens": -5}}, ["body", "constraints", "maxTokens"]),
        ({"jobId": "not-a-uuid"}, ["body", "jobId"]),
        ({"surprise": True}, ["body", "surprise"]),
        ({"expiresAt": "2001-01-01T00:00:00Z"}, ["body", "expiresAt"]),
        ({"parentJobId": "3f1c4a52-6a1e-4b61-9d0e-0f2b1f7d9a11"}, ["body", "parentJobId"]),
    ],
)
def test_invalid_envelopes_are_422_with_the_field_path(vlevel_api, change, loc):
    response = vlevel_api.post("/jobs", envelope(**change))

    assert response.status_code == 422
    assert loc in [error["loc"] for error in response.json()["errors"]]
    assert not Job.objects.exists()
    assert not IdempotencyKey.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("urls", [[], [f"https://e.com/{n}" for n in range(1001)]])
def test_a_failing_pre_condition_is_422_with_its_error_code(vlevel_api, urls):
    response = vlevel_api.post("/jobs", envelope(payload={"urls": urls}))

    assert response.status_code == 422
    assert response.json()["errors"][0]["type"] == "INVALID_URL_COUNT"
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_a_pre_condition_on_a_missing_input_fails_cleanly(vlevel_api):
    response = vlevel_api.post("/jobs", envelope(payload={}))
    assert response.status_code == 422
    assert "urls" in response.json()["errors"][0]["msg"]


@pytest.mark.django_db
def test_the_same_content_is_replayed_with_the_original_job(vlevel_api):
    first = vlevel_api.post("/jobs", envelope())

    again = vlevel_api.post("/jobs", envelope())

    assert again.status_code == 200
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["jobId"] == first.json()["jobId"]
    assert "Idempotent-Replayed" not in first
    assert Job.objects.count() == 1


@pytest.mark.django_db
def test_key_order_does_not_change_the_idempotency_key(vlevel_api):
    first = vlevel_api.post("/jobs", envelope(payload={"urls": URLS, "options": {"a": 1, "b": [1, {"x": 1, "y": 2}]}}))
    reordered = envelope(payload={"options": {"b": [1, {"y": 2, "x": 1}], "a": 1}, "urls": URLS})
    reordered["scope"] = {"entityIds": ["p1", "p2"], "entityType": "page"}

    again = vlevel_api.post("/jobs", reordered)

    assert again.status_code == 200
    assert again.json()["idempotencyKey"] == first.json()["idempotencyKey"]


@pytest.mark.django_db
def test_other_content_makes_another_job(vlevel_api):
    first = vlevel_api.post("/jobs", envelope()).json()
    other = vlevel_api.post("/jobs", envelope(payload={"urls": URLS[:1]})).json()
    assert other["jobId"] != first["jobId"]


@pytest.mark.django_db
def test_a_caller_supplied_key_wins(vlevel_api):
    first = vlevel_api.post("/jobs", envelope(idempotencyKey="nightly-2026-11-21")).json()
    again = vlevel_api.post("/jobs", envelope(idempotencyKey="nightly-2026-11-21"))
    reused = vlevel_api.post("/jobs", envelope(idempotencyKey="nightly-2026-11-21", payload={"urls": URLS[:1]}))

    assert first["idempotencyKey"] == "nightly-2026-11-21"
    assert again.status_code == 200
    assert again.json()["jobId"] == first["jobId"]
    assert reused.status_code == 409  # the key stands for other work (tests/agents/test_job_liveness.py)
    assert reused.json()["code"] == "IDEMPOTENCY_KEY_REUSED"


@pytest.mark.django_db
def test_after_the_result_ttl_the_same_content_makes_a_new_job(vlevel_api):
    first = vlevel_api.post("/jobs", envelope()).json()
    IdempotencyKey.objects.update(expires_at=timezone.now() - timedelta(seconds=1))

    again = vlevel_api.post("/jobs", envelope())

    assert again.status_code == 201
    assert again.json()["jobId"] != first["jobId"]
    assert str(IdempotencyKey.objects.get().job_id) == again.json()["jobId"]


@pytest.mark.django_db
def test_keys_are_per_agent(client, vlevel, architect):
    vlevel_job = Api(client, issue_key(agent=vlevel)).post("/jobs", envelope()).json()
    body = envelope(payload={"escalation": {"triggers": ["x"]}})
    architect_api = Api(client, issue_key(agent=architect))
    assert architect_api.post("/jobs", body).status_code == 201
    assert architect_api.post("/jobs", body).status_code == 200
    assert Job.objects.filter(agent=vlevel).get().pk.hex == vlevel_job["jobId"].replace("-", "")


@pytest.mark.django_db
def test_another_agent_cannot_read_the_job(client, vlevel, architect):
    job = Api(client, issue_key(agent=vlevel)).post("/jobs", envelope()).json()
    assert Api(client, issue_key(agent=architect)).get(f"/jobs/{job['jobId']}").status_code == 404  # as unknown


@pytest.mark.django_db
def test_operators_read_and_filter_jobs(vlevel_api, viewer_api, outsider_api):
    job = vlevel_api.post("/jobs", envelope()).json()

    assert viewer_api.get(f"/jobs/{job['jobId']}").status_code == 200
    assert outsider_api.get(f"/jobs/{job['jobId']}").status_code == 403
    assert viewer_api.get("/jobs", {"status": "queued"}).json()["count"] == 1
    assert viewer_api.get("/jobs", {"status": "failed"}).json()["count"] == 0
    assert viewer_api.get("/jobs", {"agent": "agent.seo.vlevel", "intent": "seo_audit"}).json()["count"] == 1
    assert vlevel_api.get("/jobs").json()["count"] == 1


@pytest.mark.django_db
def test_an_unknown_job_is_404(vlevel_api):
    assert vlevel_api.get("/jobs/3f1c4a52-6a1e-4b61-9d0e-0f2b1f7d9a11").status_code == 404


# Seed 001 IdempotencyConfig: keyStrategy and keyFields ------------------------------------------


@pytest.mark.django_db
def test_the_default_hash_keeps_the_keys_jobs_were_given_before_it_was_configurable(vlevel_api):
    from agents.envelope import stable_hash

    body = envelope()
    first = vlevel_api.post("/jobs", body).json()

    expected = stable_hash({"intent": body["intent"], "scope": first["scope"], "payload": body["payload"]})
    assert first["idempotencyKey"] == expected


@pytest.mark.django_db
def test_the_hash_strategy_hashes_the_configured_fields_only(vlevel_api, settings):
    settings.JOB_KEY_FIELDS = ["intent", "scope.entityType"]

    first = vlevel_api.post("/jobs", envelope()).json()
    other_urls = vlevel_api.post("/jobs", envelope(payload={"urls": URLS[:1]}))
    other_entity = vlevel_api.post("/jobs", envelope(scope={"entityType": "article"}))

    assert other_urls.status_code == 200  # the key's fields are equal: the same work, replayed
    assert other_urls.json()["jobId"] == first["jobId"]
    assert other_entity.status_code == 201
    assert first["idempotencyKey"].startswith("idem_")


@pytest.mark.django_db
def test_the_composite_strategy_joins_the_seeds_default_fields(vlevel_api, settings):
    settings.JOB_KEY_STRATEGY = "composite"
    settings.JOB_KEY_FIELDS = ["intent", "scope.entityType", "idempotencyKey"]

    job = vlevel_api.post("/jobs", envelope(idempotencyKey="nightly-7")).json()
    missing = vlevel_api.post("/jobs", envelope())

    assert job["idempotencyKey"] == "seo_audit:page:nightly-7"
    assert missing.status_code == 422
    assert missing.json()["errors"][0]["loc"] == ["body", "idempotencyKey"]


@pytest.mark.django_db
def test_the_custom_strategy_needs_the_callers_key(vlevel_api, settings):
    settings.JOB_KEY_STRATEGY = "custom"

    refused = vlevel_api.post("/jobs", envelope())
    validated = vlevel_api.post("/jobs/validate", envelope())
    accepted = vlevel_api.post("/jobs", envelope(idempotencyKey="mine"))

    assert refused.status_code == validated.status_code == 422
    assert refused.json()["errors"][0]["loc"] == ["body", "idempotencyKey"]
    assert accepted.json()["idempotencyKey"] == "mine"
    assert Job.objects.count() == 1
