"""The manifest enforced against hostile callers (seed 001, R1 and R2).

An agent that sends payloads its manifest does not declare, posts results that break its
declared outputs or the contract an output names, links its jobs under another agent's job; a
caller who floods the manifest loader with alias bombs, deep nesting or huge bodies. Each
refusal is checked for its status, the problem+json `errors[].loc`, and that nothing was written.
"""

from __future__ import annotations

import json

import pytest

from agents.models import AgentManifest, IdempotencyKey, Job
from agents.registry import load_manifest
from governance.contracts.models import ContractCheck
from governance.kernel.principals import SYSTEM
from tests.agents.test_jobs import envelope
from tests.agents.test_manifest_types import SCORES, finish, typed_document, with_contract_output
from tests.factories.agents import AgentFactory
from tests.support.api import Api
from tests.support.keys import issue_key
from tests.support.manifests import load, manifest_text
from tests.support.refusals import nothing_written

URL = "/agents/agent.seo.vlevel/manifest"
YAML = "application/yaml"


def locs(response) -> list[list]:
    assert response["Content-Type"] == "application/problem+json"
    return [error["loc"] for error in response.json()["errors"]]


def alias_bomb(size: int = 450 * 1024) -> str:
    """A YAML document of ``size`` bytes: one anchored list and aliases to it, over and over."""
    head = "Agent:\n  id: agent.seo.vlevel\n  x: &a [" + ", ".join(["lol"] * 50) + "]\n  y: ["
    return head + ", ".join(["*a"] * ((size - len(head)) // 4)) + "]\n"


def laughs(levels: int = 9) -> str:
    """Billion laughs in 90 aliases: each level lists the previous one ten times."""
    lines = ["Agent:", "  id: agent.seo.vlevel", "  l0: &l0 [" + ", ".join(["lol"] * 10) + "]"]
    lines += [f"  l{n}: &l{n} [" + ", ".join([f"*l{n - 1}"] * 10) + "]" for n in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.fixture
def typed_api(client, db) -> Api:
    agent = load_manifest(typed_document(), actor=SYSTEM)[0].agent
    return Api(client, issue_key(agent=agent))


@pytest.fixture
def catalog(db) -> None:
    from governance.contracts import services as contracts

    contracts.import_catalog(contracts.CATALOG.read_text(encoding="utf-8"), actor=SYSTEM)


# Inputs at POST /jobs and POST /jobs/validate -------------------------------------------------


BAD_PAYLOADS = [
    pytest.param({}, ["body", "payload", "urls"], "missing", id="required input missing"),
    pytest.param({"urls": "https://example.com/"}, ["body", "payload", "urls"], "type", id="string for an array"),
    pytest.param({"urls": ["https://example.com/", 42]}, ["body", "payload", "urls", 1], "type", id="number in urls"),
    pytest.param({"urls": ["javascript:alert(1)"]}, ["body", "payload", "urls", 0], "url", id="not a URL"),
    pytest.param({"urls": None}, ["body", "payload", "urls"], "type", id="null for a required input"),
]


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/jobs", "/jobs/validate"])
@pytest.mark.parametrize(("payload", "loc", "kind"), BAD_PAYLOADS)
def test_a_payload_that_breaks_the_declared_inputs_is_422_with_its_path(vlevel_api, path, payload, loc, kind):
    with nothing_written():
        response = vlevel_api.post(path, envelope(payload=payload))

    assert response.status_code == 422
    assert locs(response)[0] == loc
    assert response.json()["errors"][0]["type"] == kind
    assert not Job.objects.exists()
    assert not IdempotencyKey.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/jobs", "/jobs/validate"])
def test_a_named_schema_input_is_checked_to_the_leaf(typed_api, path):
    payload = {"urls": ["https://example.com/"], "options": {"depth": "deep", "mode": "all"}}

    response = typed_api.post(path, envelope(payload=payload))

    assert response.status_code == 422
    assert locs(response) == [["body", "payload", "options", "depth"], ["body", "payload", "options", "mode"]]
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_validate_and_submit_refuse_alike(vlevel_api):
    """One code path: the same envelope gets the same problem from both."""
    body = envelope(payload={"urls": ["nope"], "options": {}})
    submitted, validated = vlevel_api.post("/jobs", body), vlevel_api.post("/jobs/validate", body)
    assert (submitted.status_code, submitted.json()["errors"]) == (validated.status_code, validated.json()["errors"])
    failing = envelope(payload={"urls": []})  # types hold, the pre-condition does not
    assert vlevel_api.post("/jobs/validate", failing).json()["errors"][0]["type"] == "INVALID_URL_COUNT"
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_validate_refuses_who_submit_refuses(client, admin_api, vlevel):
    bare = Api(client, issue_key(agent=AgentFactory(agent_id="agent.bare")))
    response = bare.post("/jobs/validate", envelope())
    assert response.status_code == 403  # no manifest: R1
    assert "R1" in response.json()["detail"]
    assert admin_api.post("/jobs/validate", envelope()).status_code == 403  # operators do not submit jobs
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_a_huge_payload_answers_with_a_bounded_list_of_problems(vlevel_api):
    response = vlevel_api.post("/jobs", envelope(payload={"urls": [7] * 1000}))
    assert response.status_code == 422
    assert len(response.json()["errors"]) == 50
    assert not Job.objects.exists()


# parentJobId -----------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/jobs", "/jobs/validate"])
def test_a_parent_job_of_another_agent_is_403_and_nothing_is_linked(client, vlevel_api, path):
    other = Api(client, issue_key(agent=load("agent.rag.indexer")))
    foreign = other.post("/jobs", envelope(intent="rag_reindex", payload={"documents": [{"id": 1}]})).json()

    with nothing_written():
        response = vlevel_api.post(path, envelope(parentJobId=foreign["jobId"]))

    assert response.status_code == 403
    assert response["Content-Type"] == "application/problem+json"
    assert Job.objects.count() == 1
    assert not Job.objects.filter(parent_id=foreign["jobId"]).exists()


@pytest.mark.django_db
def test_an_unknown_parent_job_stays_422(vlevel_api):
    response = vlevel_api.post("/jobs", envelope(parentJobId="3f1c4a52-6a1e-4b61-9d0e-0f2b1f7d9a11"))
    assert response.status_code == 422
    assert locs(response) == [["body", "parentJobId"]]
    assert not Job.objects.exists()


# Outputs on POST /jobs/{id}/result -------------------------------------------------------------


@pytest.mark.django_db
def test_outputs_that_break_the_manifest_fail_the_job_with_their_paths(typed_api):
    job = typed_api.post("/jobs", envelope()).json()
    data = {"scores": [SCORES[0], {"url": "not a url", "level": "V9"}], "recommendations": [""]}

    body = finish(typed_api, job["jobId"], data)

    assert body["status"] == "failed"  # at once: attempts are left, but a broken contract is no transient error
    violations = [v for r in body["postConditions"] if r.get("check") == "output" for v in r["violations"]]
    assert [(v["loc"], v["type"]) for v in violations] == [
        (["data", "scores", 1, "url"], "url"),
        (["data", "scores", 1, "level"], "enum"),
        (["data", "recommendations", 0], "too_small"),
    ]
    stored = Job.objects.get(pk=job["jobId"])
    assert stored.finished_at is not None
    assert stored.post_conditions == body["postConditions"]
    audit = typed_api.get(f"/jobs/{job['jobId']}/artifacts/audit").content.decode()
    assert "- `data.scores.1.url`: 'not a url' is not a valid url (url)" in audit
    assert "`scores: z.array(VLevelScoreSchema)`: **FAIL** `OUTPUT_TYPE`" in audit
    backlog = json.loads(typed_api.get(f"/jobs/{job['jobId']}/artifacts/backlog").content)
    assert {item["reason"] for item in backlog["items"]} == {"OUTPUT_TYPE"}


@pytest.mark.django_db
def test_a_missing_required_output_is_a_violation(typed_api):
    job = typed_api.post("/jobs", envelope()).json()

    body = finish(typed_api, job["jobId"], {"recommendations": []})

    assert body["status"] == "failed"
    (missing,) = [v for r in body["postConditions"] if r.get("check") == "output" for v in r["violations"]]
    assert (missing["loc"], missing["type"]) == (["data", "scores"], "missing")


@pytest.mark.django_db
def test_data_that_is_not_an_object_breaks_every_declared_output(typed_api):
    job = typed_api.post("/jobs", envelope()).json()

    body = finish(typed_api, job["jobId"], ["scores"])

    assert body["status"] == "failed"
    (check,) = [r for r in body["postConditions"] if r.get("check") == "output"]
    assert check["violations"][0]["loc"] == ["data"]


@pytest.mark.django_db
def test_a_broken_output_counts_as_a_failure_in_the_kpis(typed_api):
    from agents.models import KpiSample

    job = typed_api.post("/jobs", envelope()).json()
    finish(typed_api, job["jobId"], {"scores": "all good"})

    assert KpiSample.objects.get(metric_id="task_success_rate").value == 0.0


# Contract-named outputs ------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_unknown_contract_is_refused_at_load_and_nothing_is_written(admin_api, catalog):
    with nothing_written():
        response = admin_api.put(URL, with_contract_output(typed_document(), contract="retrieval_answr"))

    assert response.status_code == 422
    assert locs(response) == [["body", "outputs", 2, "contract"]]
    assert not AgentManifest.objects.exists()


@pytest.mark.django_db
def test_an_output_that_breaks_its_contract_fails_the_job_with_the_contract_paths(client, catalog):
    agent = load_manifest(with_contract_output(typed_document()), actor=SYSTEM)[0].agent
    api = Api(client, issue_key(agent=agent))
    job = api.post("/jobs", envelope()).json()

    body = finish(api, job["jobId"], {"scores": SCORES, "answer": {"status": "maybe", "citations": "none"}})

    assert body["status"] == "failed"
    (contract,) = [r for r in body["postConditions"] if r.get("error_code") == "OUTPUT_CONTRACT"]
    assert contract["passed"] is False
    paths = [v["loc"] for v in contract["violations"]]
    assert ["data", "answer", "status"] in paths
    assert ["data", "answer", "citations"] in paths
    check = ContractCheck.objects.get()
    assert (str(check.job_id), check.compliant, contract["contractCheckId"]) == (job["jobId"], False, check.pk)
    audit = api.get(f"/jobs/{job['jobId']}/artifacts/audit").content.decode()
    assert "`answer: contract retrieval_answer v1`: **FAIL** `OUTPUT_CONTRACT`" in audit
    assert "- `data.answer.status`:" in audit


@pytest.mark.django_db
def test_a_missing_contract_output_is_a_violation_and_no_check_is_stored(client, catalog):
    agent = load_manifest(with_contract_output(typed_document()), actor=SYSTEM)[0].agent
    api = Api(client, issue_key(agent=agent))
    job = api.post("/jobs", envelope()).json()

    body = finish(api, job["jobId"], {"scores": SCORES})

    assert body["status"] == "failed"
    assert ["data", "answer"] in [v["loc"] for r in body["postConditions"] for v in r.get("violations", [])]
    assert not ContractCheck.objects.exists()


# Manifest types refused at load ----------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "loc"),
    [
        (
            {"inputs": [{"name": "urls", "type": "z.array(z.string().url()", "required": True}]},
            ["body", "inputs", 0, "type"],
        ),
        ({"inputs": [{"name": "urls", "type": "__import__('os').system('id')"}]}, ["body", "inputs", 0, "type"]),
        ({"outputs": [{"name": "scores", "type": "z.number().url()"}]}, ["body", "outputs", 0, "type"]),
        ({"outputs": [{"name": "scores"}]}, ["body", "outputs", 0]),
        ({"schemas": {"Bad": "z.strin()"}}, ["body", "schemas", "Bad"]),
        ({"schemas": {"Bad": {"field": "z.object({"}}}, ["body", "schemas", "Bad", "field"]),
        ({"schemas": {"not-a-name": "z.string()"}}, ["body", "schemas", "not-a-name", "[key]"]),
        ({"schemas": {"A": "z.array(B)", "B": "z.object({a: A})"}}, ["body", "schemas", "A"]),
        (
            {"inputs": [{"name": "urls", "type": "z.array(" * 20 + "z.string()" + ")" * 20}]},
            ["body", "inputs", 0, "type"],
        ),
    ],
)
def test_a_type_that_cannot_be_enforced_is_refused_at_load_with_its_path(admin_api, change, loc):
    with nothing_written():
        response = admin_api.put(URL, typed_document(**change))

    assert response.status_code == 422
    assert loc in locs(response)
    assert not AgentManifest.objects.exists()


@pytest.mark.django_db
def test_types_nested_too_deep_through_schemas_are_refused(admin_api):
    deep = "z.array(" * 12 + "{}" + ")" * 12
    schemas = {"S0": deep.format("S1"), "S1": deep.format("S2"), "S2": deep.format("z.string()")}
    response = admin_api.put(URL, typed_document(schemas=schemas))
    assert response.status_code == 422
    assert ["body", "schemas", "S0"] in locs(response)

    shallow = {"S0": "z.array(" * 12 + "S1" + ")" * 12, "S1": "z.array(" * 12 + "z.string()" + ")" * 12}
    inputs = [{"name": "urls", "type": "z.array(" * 12 + "S0" + ")" * 12}]
    response = admin_api.put(URL, typed_document(schemas=shallow, inputs=inputs))
    assert response.status_code == 422
    assert locs(response) == [["body", "inputs", 0, "type"]]


# Manifest PUT hardening -----------------------------------------------------------------------


@pytest.mark.django_db
def test_an_alias_bomb_from_an_agent_key_is_403_before_any_parsing(agent_api):
    with nothing_written():
        response = agent_api.put(URL, raw=alias_bomb(), content_type=YAML)

    assert response.status_code == 403
    assert response["Content-Type"] == "application/problem+json"


@pytest.mark.django_db
def test_an_alias_bomb_from_an_operator_without_the_permission_is_403(viewer_api):
    with nothing_written():
        response = viewer_api.put(URL, raw=alias_bomb(), content_type=YAML)
    assert response.status_code == 403


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("raw", "content_type", "message"),
    [
        pytest.param(alias_bomb(), YAML, "at most 256 KiB", id="450 KB alias fan-out"),
        pytest.param(alias_bomb(40 * 1024), YAML, "more than 100 YAML anchors and aliases", id="alias count"),
        pytest.param(laughs(), YAML, "values (YAML aliases expanded)", id="billion laughs in 90 aliases"),
        pytest.param(
            "Agent:\n  id: x\n  l: [" + ",".join(["1"] * 120_000) + "]\n",
            YAML,
            "more than 10000 values",
            id="many small values",
        ),
        pytest.param("[" * 10_000 + "]" * 10_000, YAML, "nested deeper than 32 levels", id="YAML brackets"),
        pytest.param(
            "a:\n" + "".join(f"{' ' * n} b:\n" for n in range(1, 60)), YAML, "nested deeper", id="YAML indentation"
        ),
        # Deep JSON is refused by the API's input guard before the manifest's own limit is reached.
        pytest.param("[" * 10_000 + "]" * 10_000, "application/json", "nested", id="JSON brackets"),
        pytest.param('{"a":' * 5_000 + "1" + "}" * 5_000, "application/json", "nested", id="JSON objects"),
        pytest.param(
            json.dumps({"id": "agent.seo.vlevel", "pad": "x" * 300_000}),
            "application/json",
            "at most 256 KiB",
            id="JSON size",
        ),
    ],
)
def test_hostile_documents_from_an_operator_are_422_not_cpu_or_500(admin_api, raw, content_type, message):
    with nothing_written():
        response = admin_api.put(URL, raw=raw, content_type=content_type)

    assert response.status_code == 422
    assert locs(response) == [["body"]]
    assert message in response.json()["errors"][0]["msg"]


@pytest.mark.django_db
def test_brackets_inside_json_strings_do_not_count_as_nesting(admin_api):
    from tests.agents.test_manifest_types import typed_document as document

    body = document(owner="seo-team " + "[{" * 90)
    assert admin_api.put(URL, body).status_code == 201


@pytest.mark.django_db
def test_a_few_anchors_and_aliases_still_load(admin_api):
    text = manifest_text("agent.seo.vlevel").replace(
        "  kpis:\n    - metric_id", "  kpis:\n    - &rate\n      metric_id", 1
    )
    assert "&rate" in text
    assert admin_api.put(URL, raw=text, content_type=YAML).status_code == 201
