"""Manifest types enforced (seed 001, R2): the `schemas:` section, inputs checked at submission and
at POST /jobs/validate, outputs and contract-named outputs checked on results, invariants in
audit.md. The hostile cases are in tests/adversarial/test_manifest_enforcement.py."""

from __future__ import annotations

import copy

import pytest

from agents.manifest import read_text
from agents.models import AgentManifest, IdempotencyKey, Job
from agents.registry import load_manifest
from governance.contracts import services as contracts
from governance.contracts.models import ContractCheck
from governance.kernel.principals import SYSTEM
from tests.agents.test_jobs import envelope
from tests.support.api import Api
from tests.support.keys import issue_key
from tests.support.manifests import MANIFESTS, manifest_text

SCORES = [{"url": "https://example.com/a", "level": "V2"}, {"url": "https://example.com/b", "level": "V3"}]


def typed_document(**changes) -> dict:
    """Seed 001's agent.seo.vlevel, 1.1.0, with the schemas its example only names defined."""
    document = copy.deepcopy(read_text(manifest_text("agent.seo.vlevel")))
    document.update(
        version="1.1.0",
        schemas={
            "VLevelOptionsSchema": "z.object({depth: z.number().int().min(1).max(5), "
            "mode: z.enum(['fast', 'full']).optional()})",
            "VLevelScoreSchema": {"url": "z.string().url()", "level": "z.enum(['V1', 'V2', 'V3', 'V4', 'V5'])"},
            "RecommendationSchema": "z.string().min(1)",
        },
    )
    document["outputs"][1]["type"] = "z.array(RecommendationSchema).optional()"
    document.update(changes)
    return document


def with_contract_output(document: dict, contract: str = "retrieval_answer") -> dict:
    document["outputs"].append({"name": "answer", "contract": contract, "description": "What the user reads"})
    return document


@pytest.fixture
def typed(db):
    """agent.seo.vlevel 1.1.0 with its schemas defined."""
    return load_manifest(typed_document(), actor=SYSTEM)[0].agent


@pytest.fixture
def typed_api(client, typed) -> Api:
    return Api(client, issue_key(agent=typed))


@pytest.fixture
def catalog(db) -> None:
    contracts.import_catalog(contracts.CATALOG.read_text(encoding="utf-8"), actor=SYSTEM)


def finish(api: Api, job_id: str, data: object, **changes) -> dict:
    api.post(f"/jobs/{job_id}/lease", {"owner": "worker-1"})
    body = {"success": True, "data": data, "confidence": 0.9, "nextAction": "complete", **changes}
    return api.post(f"/jobs/{job_id}/result", body, HTTP_X_LEASE_OWNER="worker-1").json()


# Loading ---------------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("path", sorted(MANIFESTS.glob("*.yaml")), ids=lambda p: p.stem)
def test_the_shipped_manifests_still_load_their_undefined_names_resolved_in_the_registry(admin_api, path):
    response = admin_api.put(
        f"/agents/{path.stem}/manifest", raw=path.read_text(encoding="utf-8"), content_type="application/yaml"
    )

    assert response.status_code == 201
    assert response.json()["warnings"] == []
    assert AgentManifest.objects.get().registry_schemas  # what its names resolved to, kept with it


@pytest.mark.django_db
def test_the_seed_example_stores_the_registry_definitions_of_the_names_it_does_not_define(admin_api):
    response = admin_api.put(
        "/agents/agent.seo.vlevel/manifest", raw=manifest_text("agent.seo.vlevel"), content_type="application/yaml"
    )

    assert response.status_code == 201
    stored = AgentManifest.objects.get()
    assert sorted(stored.registry_schemas) == ["RecommendationSchema", "VLevelOptionsSchema", "VLevelScoreSchema"]
    assert (
        "registry_schemas" not in admin_api.get("/agents/agent.seo.vlevel/manifest").json()
    )  # the document stays pure


@pytest.mark.django_db
def test_defined_schemas_are_stored_and_win_over_the_registry(admin_api):
    response = admin_api.put("/agents/agent.seo.vlevel/manifest", typed_document())

    assert response.status_code == 201
    assert response.json()["warnings"] == []
    assert AgentManifest.objects.get().registry_schemas == {}
    stored = AgentManifest.objects.get().document
    assert stored["schemas"]["VLevelScoreSchema"]["level"].startswith("z.enum(")
    assert stored["outputs"][0] == {
        "name": "scores",
        "type": "z.array(VLevelScoreSchema)",
        "contract": None,
        "description": "V-level scores V1-V5 for each URL",
    }


@pytest.mark.django_db
def test_an_output_may_name_a_contract_of_the_catalog(admin_api, catalog):
    response = admin_api.put("/agents/agent.seo.vlevel/manifest", with_contract_output(typed_document()))

    assert response.status_code == 201
    assert response.json()["outputs"][2] == {
        "name": "answer",
        "type": None,
        "contract": "retrieval_answer",
        "description": "What the user reads",
    }


# Inputs ----------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_inputs_that_match_are_accepted_and_undeclared_payload_keys_are_left_alone(typed_api):
    body = envelope(payload={"urls": ["https://example.com/a"], "options": {"depth": 2}, "note": "kept"})

    response = typed_api.post("/jobs", body)

    assert response.status_code == 201
    assert response.json()["payload"]["note"] == "kept"


@pytest.mark.django_db
def test_a_named_schema_input_is_checked_through_its_definition(typed_api):
    body = envelope(payload={"urls": ["https://example.com/a"], "options": {"depth": 9, "mode": "slow"}})

    response = typed_api.post("/jobs", body)

    assert response.status_code == 422
    assert [(e["loc"], e["type"]) for e in response.json()["errors"]] == [
        (["body", "payload", "options", "depth"], "too_big"),
        (["body", "payload", "options", "mode"], "enum"),
    ]


@pytest.mark.django_db
def test_a_registry_schema_input_is_checked_through_its_definition(vlevel_api):
    body = envelope(payload={"urls": ["https://example.com/a"], "options": "anything at all"})

    response = vlevel_api.post("/jobs", body)

    assert response.status_code == 422
    assert [(e["loc"], e["type"]) for e in response.json()["errors"]] == [(["body", "payload", "options"], "type")]
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_validate_answers_what_submit_would_without_writing(vlevel_api):
    response = vlevel_api.post("/jobs/validate", envelope())

    assert response.status_code == 200
    body = response.json()
    assert body["valid"] is True
    assert body["idempotencyKey"].startswith("idem_")
    assert body["replayOf"] is None
    assert body["preConditions"][0]["passed"] is True
    assert not Job.objects.exists()
    assert not IdempotencyKey.objects.exists()

    job = vlevel_api.post("/jobs", envelope()).json()
    again = vlevel_api.post("/jobs/validate", envelope()).json()
    assert again["idempotencyKey"] == job["idempotencyKey"]
    assert again["replayOf"] == job["jobId"]
    assert Job.objects.count() == 1


@pytest.mark.django_db
def test_a_child_job_of_the_agents_own_job_is_linked(vlevel_api):
    parent = vlevel_api.post("/jobs", envelope()).json()

    child = vlevel_api.post("/jobs", envelope(parentJobId=parent["jobId"], payload={"urls": ["https://e.com/x"]}))

    assert child.status_code == 201
    assert child.json()["parentJobId"] == parent["jobId"]


# Outputs ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_outputs_that_match_let_the_job_succeed(typed_api):
    job = typed_api.post("/jobs", envelope()).json()

    body = finish(typed_api, job["jobId"], {"scores": SCORES})  # recommendations are optional here

    assert body["status"] == "succeeded"
    checks = [r for r in body["postConditions"] if r.get("check") == "output"]
    assert [(r["output"], r["passed"], r["violations"]) for r in checks] == [
        ("scores", True, []),
        ("recommendations", True, []),
    ]


@pytest.mark.django_db
def test_a_failed_result_is_not_checked_against_the_outputs(typed_api):
    job = typed_api.post("/jobs", envelope()).json()
    Job.objects.filter(pk=job["jobId"]).update(attempts=2)  # finish() takes the last attempt

    body = finish(typed_api, job["jobId"], None, success=False)

    assert body["status"] == "failed"
    assert not [r for r in body["postConditions"] if r.get("check") == "output"]


@pytest.mark.django_db
def test_a_compliant_contract_output_is_checked_and_recorded_against_the_job(client, catalog):
    agent = load_manifest(with_contract_output(typed_document()), actor=SYSTEM)[0].agent
    api = Api(client, issue_key(agent=agent))
    job = api.post("/jobs", envelope()).json()

    body = finish(api, job["jobId"], {"scores": SCORES, "answer": {"status": "ok", "answer": "42"}})

    assert body["status"] == "succeeded"
    (check,) = ContractCheck.objects.all()
    assert (check.contract_name, str(check.job_id), check.agent, check.compliant) == (
        "retrieval_answer",
        job["jobId"],
        agent,
        True,
    )
    (contract_result,) = [r for r in body["postConditions"] if r.get("error_code") == "OUTPUT_CONTRACT"]
    assert contract_result["passed"] is True
    assert contract_result["contractCheckId"] == check.pk


# audit.md --------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_audit_md_lists_the_invariants_and_the_output_checks(typed_api):
    job = typed_api.post("/jobs", envelope()).json()
    finish(typed_api, job["jobId"], {"scores": SCORES})

    text = typed_api.get(f"/jobs/{job['jobId']}/artifacts/audit").content.decode()

    invariants = text.split("## Invariants\n")[1].split("\n\n")[0]
    assert invariants == "- No URL modification without feature flag\n- Router pages must not contain expert content"
    assert "## Output checks\n- `scores: z.array(VLevelScoreSchema)`: pass" in text


@pytest.mark.django_db
def test_audit_md_names_the_schemas_a_version_stored_before_the_registry_could_not_check(vlevel_api, vlevel):
    AgentManifest.objects.filter(pk=vlevel.active_manifest_id).update(registry_schemas={})  # as upgraded rows are
    job = vlevel_api.post("/jobs", envelope()).json()
    finish(vlevel_api, job["jobId"], {"scores": SCORES, "recommendations": []})

    text = vlevel_api.get(f"/jobs/{job['jobId']}/artifacts/audit").content.decode()

    assert "unchecked (schemas not defined): VLevelScoreSchema" in text
