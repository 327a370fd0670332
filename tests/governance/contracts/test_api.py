"""The contracts API (/api/v1/contracts): catalog, validation with audit records, batch audit,
spec audit and statistics, as agents and operators use them."""

from __future__ import annotations

import pytest

from governance.contracts.models import ContractCheck, ContractDailyStat, ContractViolationStat
from tests.factories.sessions import AISessionFactory

pytestmark = pytest.mark.django_db

RANKING = "memory_retrieval_ranking"
GOOD_RANKING = {"rankings": [{"id": 3, "adjusted_score": 0.7, "rank": 1}, {"id": 5, "score": 0.2}]}


def test_the_catalog_lists_the_seventy_contracts_with_their_field_counts(agent_api, catalog):
    first = agent_api.get("/contracts?limit=100")
    assert first.status_code == 200
    body = first.json()
    assert body["count"] == 70
    by_name = {item["name"]: item for item in body["items"]}
    assert by_name[RANKING] == {
        "name": RANKING,
        "module": "AGI_Evolutive/memory/retrieval.py",
        "section": "Mémoire",
        "version": 1,
        "fields": 6,
    }


def test_the_catalog_filters_by_section_and_name(viewer_api, catalog):
    social = viewer_api.get("/contracts?section=Social&limit=100").json()
    assert social["count"] == 10
    assert {i["section"] for i in social["items"]} == {"Social"}
    assert [i["name"] for i in viewer_api.get("/contracts?q=ranking").json()["items"]] == [RANKING]


def test_an_operator_without_a_role_may_not_read_the_catalog(outsider_api, catalog):
    assert outsider_api.get("/contracts").status_code == 403
    assert outsider_api.post(f"/contracts/{RANKING}/validate", {"output": {}}).status_code == 403


def test_a_contract_shows_each_field_with_type_requirement_and_effect(agent_api, catalog):
    body = agent_api.get(f"/contracts/{RANKING}").json()
    fields = {f["path"]: f for f in body["fields"]}
    assert fields["rankings[*].id"]["type"] == "identifiant numérique existant"
    assert fields["rankings[*].id"]["required"] == "yes"
    assert fields["rankings[*].adjusted_score"]["alternatives"] == ["rankings[*].score"]
    assert fields["rankings[*].adjusted_score"]["constraints"] == {}
    assert "35" in fields["rankings[*].adjusted_score"]["effect"]
    assert "Éviter les ids texte" in body["notes"]


def test_bounds_and_conditions_are_part_of_the_fields(agent_api, catalog):
    intent = {f["path"]: f for f in agent_api.get("/contracts/intent_ingestion").json()["fields"]}
    assert intent["intent.confidence"]["constraints"] == {"minimum": 0.0, "maximum": 1.0}
    belief = {f["path"]: f for f in agent_api.get("/contracts/belief_graph_orchestrator").json()["fields"]}
    assert belief["result.belief_id"]["required"] == "conditional"
    assert belief["result.belief_id"]["condition"] == "operation in upsert_belief, add_evidence"


def test_an_unknown_contract_is_404(agent_api, catalog):
    assert agent_api.get("/contracts/nope").status_code == 404
    assert agent_api.post("/contracts/nope/validate", {"output": {}}).status_code == 404


def test_a_compliant_output_is_reported_and_stored(agent_api, agent, catalog):
    response = agent_api.post(f"/contracts/{RANKING}/validate", {"output": GOOD_RANKING})
    assert response.status_code == 200
    report = response.json()
    assert report["compliant"] is True
    assert report["violations"] == []
    stored = ContractCheck.objects.get(pk=report["reportId"])
    assert (stored.contract.version, stored.agent, stored.compliant, stored.output) == (1, agent, True, GOOD_RANKING)


def test_every_violation_comes_with_its_concrete_path_code_message_and_effect(agent_api, catalog):
    output = {"rankings": [{"id": 3, "score": 0.4}, {"id": "7", "score": 0.1}, {"id": 9}]}
    report = agent_api.post(f"/contracts/{RANKING}/validate", {"output": output}).json()
    assert report["compliant"] is False
    found = {(v["path"], v["code"]) for v in report["violations"]}
    assert found == {("rankings[1].id", "wrong_type"), ("rankings[2].adjusted_score", "alternative_missing")}
    string_id = next(v for v in report["violations"] if v["path"] == "rankings[1].id")
    assert "string" in string_id["message"]
    assert string_id["hint"]
    assert string_id["effect"].startswith("Permet d\u2019associer")


def test_ids_the_input_did_not_offer_are_unknown(agent_api, catalog):
    body = {"output": GOOD_RANKING, "known_ids": [3, 4]}
    report = agent_api.post(f"/contracts/{RANKING}/validate", body).json()
    assert [(v["path"], v["code"]) for v in report["violations"]] == [("rankings[1].id", "unknown_id")]


def test_a_list_sent_as_a_json_string_is_a_wrong_type_with_a_hint(agent_api, catalog):
    output = {"intent": {"label": "BUY", "confidence": 0.9}, "follow_up_questions": '["when?", "where?"]'}
    report = agent_api.post("/contracts/intent_ingestion/validate", {"output": output}).json()
    (violation,) = report["violations"]
    assert (violation["path"], violation["code"]) == ("follow_up_questions", "wrong_type")
    assert "inside a string" in violation["hint"]


def test_extra_fields_are_warnings_not_violations(agent_api, catalog):
    output = {"status": "ok", "answer": "yes", "surprise": 1}
    report = agent_api.post("/contracts/retrieval_answer/validate", {"output": output}).json()
    assert report["compliant"] is True
    assert [(w["path"], w["code"]) for w in report["warnings"]] == [("surprise", "unknown_field")]


def test_an_output_that_is_not_an_object_is_reported_at_the_root(agent_api, catalog):
    report = agent_api.post(f"/contracts/{RANKING}/validate", {"output": "rankings: none"}).json()
    assert [(v["path"], v["code"]) for v in report["violations"]] == [("$", "wrong_type")]


def test_a_validation_request_without_output_is_422_and_stores_nothing(agent_api, catalog):
    response = agent_api.post(f"/contracts/{RANKING}/validate", {"session": None})
    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["body", "output"]
    assert not ContractCheck.objects.exists()


def test_a_check_can_name_the_agents_own_session_but_not_another_agents(agent_api, other_agent, catalog):
    theirs = AISessionFactory(agent=other_agent, name="theirs")
    response = agent_api.post(f"/contracts/{RANKING}/validate", {"output": GOOD_RANKING, "session": str(theirs.pk)})
    assert response.status_code == 403
    assert not ContractCheck.objects.exists()


def test_outputs_are_kept_as_a_hash_only_when_configured(agent_api, catalog, settings):
    settings.CONTRACT_AUDIT_STORE_OUTPUTS = False
    report = agent_api.post(f"/contracts/{RANKING}/validate", {"output": GOOD_RANKING}).json()
    stored = ContractCheck.objects.get(pk=report["reportId"])
    assert stored.output is None
    assert len(stored.output_sha256) == 64


def test_a_batch_audit_checks_each_item_against_its_contract(agent_api, catalog):
    items = [
        {"contract": RANKING, "output": GOOD_RANKING},
        {"contract": "retrieval_answer", "output": {"status": "maybe"}},
        {"contract": "phenomenal_mode_manager", "output": {"mode": "travail", "flanerie_ratio": 2}},
    ]
    response = agent_api.post("/contracts/audit", {"items": items})
    assert response.status_code == 200
    body = response.json()
    assert (body["total"], body["compliant"]) == (3, 1)
    assert [r["contract"] for r in body["reports"]] == [RANKING, "retrieval_answer", "phenomenal_mode_manager"]
    assert body["reports"][1]["violations"][0]["code"] == "not_in_enum"
    assert body["reports"][2]["violations"][0]["code"] == "out_of_range"
    assert ContractCheck.objects.filter(source="batch").count() == 3


def test_a_batch_naming_an_unknown_contract_is_refused_whole(agent_api, catalog):
    items = [{"contract": RANKING, "output": GOOD_RANKING}, {"contract": "nope", "output": {}}]
    response = agent_api.post("/contracts/audit", {"items": items})
    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["body", "items", 1, "contract"]
    assert not ContractCheck.objects.exists()


def test_a_batch_holds_at_most_a_thousand_items(agent_api, catalog):
    items = [{"contract": "retrieval_answer", "output": {"status": "ok"}}] * 1001
    response = agent_api.post("/contracts/audit", {"items": items})
    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["body", "items"]


def test_aggregates_follow_every_check(agent_api, agent, catalog):
    outputs = [GOOD_RANKING, {"rankings": [{"id": "1", "score": 0.1}]}, {"rankings": [{"id": "2"}]}]
    agent_api.post("/contracts/audit", {"items": [{"contract": RANKING, "output": o} for o in outputs]})
    (daily,) = ContractDailyStat.objects.all()
    assert (daily.contract_name, daily.agent_label, daily.checks, daily.compliant, daily.violations) == (
        RANKING,
        agent.agent_id,
        3,
        1,
        3,
    )
    counts = {(s.path, s.code): s.count for s in ContractViolationStat.objects.all()}
    assert counts == {("rankings[*].id", "wrong_type"): 2, ("rankings[*].adjusted_score", "alternative_missing"): 1}


def test_stats_give_the_compliance_rate_and_top_violations(agent_api, admin_api, catalog):
    bad = {"rankings": [{"id": "1", "score": 0.5}]}
    items = [{"contract": RANKING, "output": o} for o in [bad, bad, GOOD_RANKING]]
    agent_api.post("/contracts/audit", {"items": items})
    response = admin_api.get(f"/contracts/{RANKING}/stats")
    assert response.status_code == 200
    body = response.json()
    assert (body["checks"], body["compliant"], body["compliance_rate"]) == (3, 1, 0.3333)
    assert body["top_violations"] == [{"path": "rankings[*].id", "code": "wrong_type", "count": 2}]
    assert [d["checks"] for d in body["per_day"]] == [3]
    assert admin_api.get(f"/contracts/{RANKING}/stats?since=2999-01-01").json()["checks"] == 0


def test_stats_are_for_operators_only(agent_api, outsider_api, catalog):
    assert agent_api.get(f"/contracts/{RANKING}/stats").status_code == 403
    assert outsider_api.get(f"/contracts/{RANKING}/stats").status_code == 403


def test_a_spec_audit_of_a_json_schema_finds_what_the_prompt_forgets_and_invents(agent_api, catalog):
    schema = {
        "type": "object",
        "properties": {
            "rankings": {
                "type": "array",
                "items": {"type": "object", "properties": {"id": {"type": "string"}, "why": {"type": "string"}}},
            }
        },
    }
    body = agent_api.post(f"/contracts/{RANKING}/spec-audit", {"schema": schema}).json()
    assert body["kind"] == "schema"
    assert [m["path"] for m in body["missing_required"]] == ["rankings[*].adjusted_score or rankings[*].score"]
    assert body["unknown_fields"] == [{"path": "rankings[*].why"}]
    assert body["type_mismatches"] == [{"path": "rankings[*].id", "expected": "numeric id", "declared": ["string"]}]


def test_a_spec_audit_of_an_example_answer(agent_api, catalog):
    example = {"mode": "sieste", "justification": "tired"}
    body = agent_api.post("/contracts/phenomenal_mode_manager/spec-audit", example).json()
    assert body["kind"] == "example"
    assert body["missing_required"] == []
    assert body["unknown_fields"] == []
    assert body["type_mismatches"] == []  # an example's value is a string: the enum is only checked on schemas
    schema = {"type": "object", "properties": {"mode": {"type": "string", "enum": ["travail", "sieste"]}}}
    mismatch = agent_api.post("/contracts/phenomenal_mode_manager/spec-audit", schema).json()["type_mismatches"]
    expected = "string (one of travail, flanerie)"
    assert mismatch == [{"path": "mode", "expected": expected, "declared": ["sieste", "travail"]}]


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_non_json_number_in_an_output_is_an_audited_violation_not_a_422(agent_api, catalog, literal):
    """Seed 000's outputs come from a model: NaN in one is a violation the compliance figures count,
    like any other, and the output is judged non-compliant."""
    raw = '{"output": {"rankings": [{"id": 3, "adjusted_score": LITERAL}]}, "known_ids": [3]}'.replace(
        "LITERAL", literal
    )

    response = agent_api.post(f"/contracts/{RANKING}/validate", raw=raw)

    assert response.status_code == 200, response.json()
    report = response.json()
    assert report["compliant"] is False
    assert [(v["path"], v["code"]) for v in report["violations"]] == [
        ("rankings[0].adjusted_score", "not_serializable")
    ]
    check = ContractCheck.objects.get(pk=report["reportId"])
    assert check.compliant is False
    daily = ContractDailyStat.objects.get(contract_name=RANKING)
    assert (daily.checks, daily.compliant) == (1, 0)
    assert ContractViolationStat.objects.get(contract_name=RANKING).code == "not_serializable"


def test_a_non_json_number_in_a_batch_output_is_a_violation_and_elsewhere_still_a_422(agent_api, catalog):
    good = f'{{"contract": "{RANKING}", "output": {{"rankings": [{{"id": 3, "score": 0.5}}]}}, "known_ids": [3]}}'
    bad = f'{{"contract": "{RANKING}", "output": {{"rankings": [{{"id": 3, "score": NaN}}]}}, "known_ids": [3]}}'

    response = agent_api.post("/contracts/audit", raw=f'{{"items": [{good}, {bad}]}}')

    assert response.status_code == 200, response.json()
    assert [r["compliant"] for r in response.json()["reports"]] == [True, False]
    assert ContractCheck.objects.count() == 2
    # Outside an output, a non-finite number is still refused before anything is written.
    outside = agent_api.post(f"/contracts/{RANKING}/validate", raw='{"output": {}, "known_ids": [NaN]}')
    assert outside.status_code == 422
    assert outside.json()["errors"][0]["loc"] == ["body", "known_ids", 0]
    nul = agent_api.post(f"/contracts/{RANKING}/validate", raw='{"output": {"rankings": "a\\u0000b"}}')
    assert nul.status_code == 422
    assert ContractCheck.objects.count() == 2
