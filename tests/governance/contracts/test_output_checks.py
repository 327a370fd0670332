"""Whole outputs judged against the seed 000 contracts (governance/contract_rules.py): paths,
alternatives and conditions, unknown fields and nulls, reports and violation codes with the
concrete path each names, and the first part of an output that is not JSON.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from governance.contracts.codegen import compile_contract
from governance.contracts.rules import Code, rule_from_row
from governance.contracts.validator import Report, Violation, first_unserializable
from tests.governance.contracts.validators import BY_NAME, found, only, validator, warned

# --- Paths, alternatives, conditions: the seed's contracts --------------------------------------------


def test_a_missing_required_field_names_its_path_and_effect():
    violation = only(validator("intent_ingestion")({"intent": {"confidence": 0.4}}))
    assert (violation.path, violation.code) == ("intent.label", Code.MISSING_REQUIRED)
    assert violation.message == "required field is missing"
    assert violation.effect == "Normalisé en majuscules pour piloter les couches amont."


def test_required_fields_under_a_missing_parent_are_each_missing():
    report = validator("intent_ingestion")({"summary": "s"})
    assert found(report) == [("intent.label", "missing_required"), ("intent.confidence", "missing_required")]


def test_a_parent_of_the_wrong_shape_is_one_wrong_type():
    violation = only(validator("intent_ingestion")({"intent": "GREETING"}))
    assert (violation.path, violation.code, violation.message) == (
        "intent",
        Code.WRONG_TYPE,
        "expected object, got string",
    )
    hint = only(validator("intent_ingestion")({"intent": '{"label": "x", "confidence": 1}'})).hint
    assert hint == "the value is a JSON object serialised inside a string: send it as JSON, not as text"


def test_a_parent_with_its_own_row_reports_alone():
    report = validator("social_rule_update")({})
    assert found(report) == [("rule", "missing_required")]
    assert found(validator("social_rule_update")({"rule": []})) == [("rule", "wrong_type")]
    assert found(validator("social_rule_update")({"rule": {}})) == [("rule.id", "missing_required")]


def test_required_fields_in_list_items_name_the_item():
    output = {"rules": [{"id": "r1", "tactic": {}, "predicates": []}, {"id": "r2", "predicates": []}]}
    violation = only(validator("social_interaction_miner")(output))
    assert (violation.path, violation.code) == ("rules[1].tactic", Code.MISSING_REQUIRED)


def test_a_wrong_type_in_a_list_item_names_the_item():
    signals = [{"metric": "a"}, {"metric": "b"}, {"metric": 7}]
    output = {"accepted": True, "intention": {"action_type": "t"}, "evaluation": {}, "signals": signals}
    violation = only(validator("auto_evolution")(output))
    assert (violation.path, violation.code) == ("signals[2].metric", Code.WRONG_TYPE)
    assert violation.message == "expected string, got integer"


def test_an_out_of_range_value_in_a_list_item():
    output = {"actions": [{"label": "a", "priority": 0.5}, {"label": "b", "priority": 1.5}]}
    violation = only(validator("social_rule_self_evaluation")(output))
    assert (violation.path, violation.code, violation.message) == (
        "actions[1].priority",
        Code.OUT_OF_RANGE,
        "1.5 is outside [0, 1]",
    )


def test_an_enum_value_in_a_list_item():
    output = {"signals": [{"metric": "m", "direction": "above"}, {"metric": "n", "direction": "up"}]}
    assert found(validator("auto_signal_derivation")(output)) == [("signals[1].direction", "not_in_enum")]


def test_an_empty_string_in_a_list_item():
    output = {"plan": [{"description": "first"}, {"description": " "}]}
    assert found(validator("planner_support")(output)) == [("plan[1].description", "empty_string")]


def test_a_deep_path_under_a_list():
    patch = {"target_id": "t", "patched_source": "x = 1", "assessment": {"should_promote": "yes"}}
    validate = validator("code_evolver")
    assert found(validate({"patches": [patch]})) == [("patches[0].assessment.should_promote", "wrong_type")]
    del patch["assessment"]
    assert found(validate({"patches": [patch]})) == [("patches[0].assessment.should_promote", "missing_required")]


def test_an_item_of_the_wrong_shape_hides_its_fields():
    """The list's own rule reports the item; its fields are not reported again."""
    output = {"rules": ["r1"]}
    assert found(validator("social_interaction_miner")(output)) == [("rules[0]", "wrong_type")]


def test_an_empty_required_list_is_compliant():
    assert validator("social_interaction_miner")({"rules": []}).compliant


def test_answer_or_text_is_required():
    validate = validator("question_auto_answer")
    assert validate({"answer": "yes"}).compliant
    assert validate({"text": "yes"}).compliant
    violation = only(validate({"confidence": 0.4}))
    assert (violation.path, violation.code) == ("answer", Code.ALTERNATIVE_MISSING)
    assert violation.message == "one of answer or text is required"


def test_both_alternatives_present_are_both_checked():
    assert found(validator("question_auto_answer")({"answer": "", "text": "ok"})) == [("answer", "empty_string")]


def test_state_summary_or_summary_is_required():
    validate = validator("dialogue_state")
    base = {"open_commitments": [], "pending_questions": []}
    assert validate({**base, "summary": "s"}).compliant
    assert validate({**base, "state_summary": "s"}).compliant
    violation = only(validate(base))
    assert (violation.path, violation.message) == ("state_summary", "one of state_summary or summary is required")


def test_the_adjusted_score_or_score_alternative_inside_list_items():
    validate = validator("memory_retrieval_ranking")
    known = frozenset({"1", "2"})
    assert validate({"rankings": [{"id": 1, "adjusted_score": 0.2}, {"id": 2, "score": 3}]}, known).compliant
    violation = only(validate({"rankings": [{"id": 1, "score": 1}, {"id": 2, "rank": 1}]}, known))
    assert (violation.path, violation.code) == ("rankings[1].adjusted_score", Code.ALTERNATIVE_MISSING)
    assert violation.message == "one of rankings[1].adjusted_score or rankings[1].score is required"


def test_a_text_id_in_memory_retrieval_ranking_is_the_vigilance_of_the_seed():
    violation = only(validator("memory_retrieval_ranking")({"rankings": [{"id": "7", "score": 0.5}]}))
    assert (violation.path, violation.code) == ("rankings[0].id", Code.WRONG_TYPE)
    assert violation.hint.startswith("a numeric id written as a string")


def test_an_unknown_ranking_id():
    report = validator("memory_retrieval_ranking")({"rankings": [{"id": 8, "score": 0.5}]}, frozenset({"7"}))
    assert found(report) == [("rankings[0].id", "unknown_id")]


def test_the_from_or_src_alternative_of_each_link():
    validate = validator("episodic_linker")
    known = frozenset({"m0", "m1"})
    assert validate({"links": [{"src": "m0", "dst": "m1", "relation": "CAUSES"}]}, known).compliant
    assert validate({"links": [{"from": "m0", "to": "m1", "type_lien": "SUPPORTS"}]}, known).compliant
    report = validate({"links": [{"from": "m0", "to": "m1", "relation": "x"}, {"to": "m0", "relation": "x"}]}, known)
    assert found(report) == [("links[1].from", "alternative_missing")]
    assert report.violations[0].message == "one of links[1].from or links[1].src is required"


def test_an_unknown_link_alias():
    known = frozenset({"m0", "m1"})
    report = validator("episodic_linker")({"links": [{"from": "m0", "dst": "m5", "relation": "x"}]}, known)
    assert found(report) == [("links[0].dst", "unknown_id")]


@pytest.mark.parametrize("operation", ["upsert_belief", "add_evidence"])
def test_belief_id_is_required_for_its_operations(operation):
    validate = validator("belief_graph_orchestrator")
    assert validate({"result": {"operation": operation, "belief_id": "b1"}}).compliant
    violation = only(validate({"result": {"operation": operation}}))
    assert (violation.path, violation.code) == ("result.belief_id", Code.CONDITIONAL_MISSING)
    assert violation.message == f"required when result.operation is {operation!r}"


def test_event_id_is_required_for_add_event_only():
    validate = validator("belief_graph_orchestrator")
    assert found(validate({"result": {"operation": "add_event"}})) == [("result.event_id", "conditional_missing")]
    assert validate({"result": {"operation": "retire"}}).compliant
    assert validate({"result": {}}).compliant
    assert validate({}).compliant


def test_priority_or_priority_delta_is_required():
    validate = validator("goal_priority_review")
    assert validate({"priority": 0.4}).compliant
    assert validate({"priority_delta": -0.2}).compliant
    assert validate({"priority": 1, "priority_delta": 5}).compliant
    violation = only(validate({"confidence": 0.9}))
    assert (violation.path, violation.code) == ("priority", Code.ALTERNATIVE_MISSING)
    assert violation.message == "one of priority or priority_delta is required"
    assert found(validate({"priority": 1.2})) == [("priority", "out_of_range")]


def test_diagnostics_fields_are_checked_inside_their_object():
    validate = validator("response_formatter")
    good = {"message": "m", "diagnostics": {"hypothese": "h", "incertitude": 0.3, "besoins": [], "questions": ["q"]}}
    assert validate(good).compliant
    assert validate(good).warnings == ()
    bad = {"message": "m", "diagnostics": {"incertitude": 2, "besoins": ["a", 3], "questions": "q"}}
    assert found(validate(bad)) == [
        ("diagnostics.incertitude", "out_of_range"),
        ("diagnostics.besoins[1]", "wrong_type"),
        ("diagnostics.questions", "wrong_type"),
    ]
    assert found(validate({"message": "m", "diagnostics": ["h"]})) == [("diagnostics", "wrong_type")]
    assert warned(validate({"message": "m", "diagnostics": {"trace": 1}})) == [("diagnostics.trace", "unknown_field")]


def test_optional_fields_of_one_row_are_independent():
    validate = validator("intent_ingestion")
    base = {"intent": {"label": "L", "confidence": 0.5}}
    assert validate({**base, "sentiment": "calm"}).compliant
    assert found(validate({**base, "tone": "x", "urgency": 3})) == [("urgency", "wrong_type")]


def test_an_implicit_requirement_only_warns():
    report = validator("conversation_context")({"summary": ["s"]})
    assert report.compliant
    (warning,) = report.warnings
    assert (warning.path, warning.code, warning.message) == (
        "llm_summary",
        Code.MISSING_REQUIRED,
        "implicitly required field is missing",
    )


def test_null_in_an_optional_field_is_a_warning_treated_as_absent():
    report = validator("social_conversation_rewrite")({"rewritten": "r", "justification": None})
    assert report.compliant
    assert warned(report) == [("justification", "null_value")]
    assert report.warnings[0].message == "null given: treated as absent"


def test_null_in_a_required_field_is_wrong_type():
    violation = only(validator("social_conversation_rewrite")({"rewritten": None}))
    assert (violation.code, violation.message) == (Code.WRONG_TYPE, "expected string, got null")


def test_extra_fields_are_unknown_field_warnings():
    report = validator("social_conversation_rewrite")({"rewritten": "r", "mood": "ok", "extra": {"a": 1}})
    assert report.compliant
    assert warned(report) == [("mood", "unknown_field"), ("extra", "unknown_field")]
    assert report.warnings[0].message == "not in the contract"


def test_extra_fields_in_nested_objects_and_list_items_are_warnings():
    output = {"rules": [{"id": "r", "tactic": {"any": 1}, "predicates": [], "weight": 2}], "notes": "n"}
    report = validator("social_interaction_miner")(output)
    assert report.compliant
    assert warned(report) == [("rules[0].weight", "unknown_field")]


def test_other_fields_of_question_manager_are_accepted_when_serializable():
    validate = validator("question_manager")
    report = validate({"questions": [{"text": "Why?"}], "insights": ["i"], "meta": {"k": 1}})
    assert report.compliant
    assert report.warnings == ()


def test_other_fields_that_are_not_json_are_not_serializable():
    validate = validator("memory_semantic_bridge")
    report = validate({"memories": [], "debug": {"at": object()}, "score": math.nan})
    assert found(report) == [("debug.at", "not_serializable"), ("score", "not_serializable")]


def test_documented_item_keys_of_memory_semantic_bridge():
    report = validator("memory_semantic_bridge")({"memories": [{"id": 1, "text": "t", "vector": [0.1]}]})
    assert report.compliant
    assert warned(report) == [("memories[0].vector", "unknown_field")]


def test_memory_store_strategy_metadata_updates_must_be_json():
    validate = validator("memory_store_strategy")
    assert validate({"metadata_updates": {"a": [1, 2]}, "notes": object()}).compliant
    violation = only(validate({"metadata_updates": {"when": {"at": math.inf}}}))
    assert (violation.path, violation.code) == ("metadata_updates.when.at", Code.NOT_SERIALIZABLE)


def test_the_whole_output_of_memory_long_term_digest_must_be_json():
    validate = validator("memory_long_term_digest")
    assert validate({}).compliant
    report = validate({"anything": [1, {"b": None}]})
    assert report.compliant
    assert report.warnings == ()
    assert found(validate({"a": {"b": [0, math.nan]}})) == [("a.b[1]", "not_serializable")]
    assert found(validate([1, 2])) == [("", "wrong_type")]


def test_the_whole_output_serialised_in_a_string_has_a_hint():
    violation = only(validator("memory_long_term_digest")('{"a": 1}'))
    assert violation.hint == "the value is a JSON object serialised inside a string: send it as JSON, not as text"


@pytest.mark.parametrize(("output", "got"), [([], "list"), ("text", "string"), (None, "null"), (3, "integer")])
def test_an_output_that_is_not_an_object(output, got):
    violation = only(validator("retrieval_answer")(output))
    assert (violation.path, violation.code, violation.message) == (
        "",
        Code.WRONG_TYPE,
        f"expected an object, got {got}",
    )
    assert violation.as_dict()["path"] == "$"


def test_an_output_object_serialised_in_a_string_has_a_hint():
    violation = only(validator("retrieval_answer")('{"status": "ok"}'))
    assert violation.hint == "the whole output is JSON inside a string: send the object"
    assert only(validator("retrieval_answer")('["ok"]')).hint == ""


def test_a_compliant_retrieval_answer_has_no_finding():
    output = {"status": "refused", "answer": "", "citations": [{"doc_id": "d"}], "notes": ["n"], "meta": {}}
    report = validator("retrieval_answer")(output)
    assert report.compliant
    assert report.violations == ()
    assert report.warnings == ()


def test_a_retrieval_answer_with_many_errors_reports_them_all():
    output = {"status": "done", "answer": 3, "citations": {"doc": 1}, "notes": ["n", None]}
    assert found(validator("retrieval_answer")(output)) == [
        ("status", "not_in_enum"),
        ("answer", "wrong_type"),
        ("citations", "wrong_type"),
        ("notes[1]", "wrong_type"),
    ]


def test_a_validator_keeps_no_state_between_calls():
    validate = validator("retrieval_answer")
    assert not validate({}).compliant
    assert validate({"status": "ok"}).compliant
    assert found(validate({})) == [("status", "missing_required")]


def test_warnings_do_not_make_an_output_non_compliant():
    report = Report(warnings=(Violation("x", Code.UNKNOWN_FIELD, "not in the contract"),))
    assert report.compliant
    assert not Report(violations=(Violation("x", Code.WRONG_TYPE, "m"),)).compliant


def test_a_violation_as_the_api_shows_it():
    full = Violation("signals[2].metric", Code.WRONG_TYPE, "expected string, got integer", "lost", "send a string")
    assert full.as_dict() == {
        "path": "signals[2].metric",
        "code": "wrong_type",
        "message": "expected string, got integer",
        "effect": "lost",
        "hint": "send a string",
    }
    assert Violation("", Code.WRONG_TYPE, "m").as_dict() == {"path": "$", "code": "wrong_type", "message": "m"}


def test_every_code_has_its_documented_value():
    assert {c.value for c in Code} == {
        "missing_required",
        "wrong_type",
        "out_of_range",
        "not_in_enum",
        "empty_string",
        "not_serializable",
        "unknown_id",
        "alternative_missing",
        "conditional_missing",
        "unknown_field",
        "null_value",
    }


# --- first_unserializable --------------------------------------------------------------------------


@pytest.mark.parametrize("value", [None, True, 0, -1.5, "s", [], {}, [1, [2, {"a": None}]], {"a": {"b": "c"}}])
def test_json_values_are_serializable(value):
    assert first_unserializable(value, "") is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (math.nan, ("", "nan is not a JSON number")),
        ([1, -math.inf], ("[1]", "-inf is not a JSON number")),
        ({"a": [{"b": object()}]}, ("a[0].b", "a object is not JSON")),
        ({"a": {1: 2}}, ("a", "key 1 is not a string")),
        ({"t": (1, 2)}, ("t", "a tuple is not JSON")),
        ({"a": 1, "b": math.nan, "c": object()}, ("b", "nan is not a JSON number")),
    ],
)
def test_the_first_non_json_part_is_named(value, expected):
    assert first_unserializable(value, "") == expected


def test_first_unserializable_starts_from_the_given_path():
    assert first_unserializable({"x": math.nan}, "meta") == ("meta.x", "nan is not a JSON number")


def _assert_report_paths_are_concrete(report: Report) -> None:
    for item in [*report.violations, *report.warnings]:
        assert "*" not in item.path


@pytest.mark.parametrize(
    ("name", "output"),
    [
        ("code_evolver", {"patches": [{"assessment": {}, "evaluation": {"quality": 1}}]}),
        ("cognition_proposer", {"suggestions": [{}, {"type": 1, "path": "", "value": object()}]}),
        ("action_interface", {"actions": [{"name": "n", "type": "t", "impact": 2, "effort": -1, "risk": "high"}]}),
        ("semantic_memory_manager", {"tasks": [{"task": "", "category": "plus_tard", "period": "1h"}]}),
    ],
)
def test_reported_paths_never_hold_a_wildcard(name, output):
    report = validator(name)(output, frozenset({"m0"}))
    assert not report.compliant
    _assert_report_paths_are_concrete(report)


def test_cognition_proposer_reports_each_bad_suggestion_field():
    output = {
        "suggestions": [{"type": "update", "path": ["a", 0], "value": 1}, {"type": 1, "path": "", "value": object()}]
    }
    assert found(validator("cognition_proposer")(output)) == [
        ("suggestions[1].type", "wrong_type"),
        ("suggestions[1].path", "empty_string"),
        ("suggestions[1].value", "not_serializable"),
    ]


def test_cognition_proposer_needs_a_path_or_target_and_a_value_or_adjustment():
    report = validator("cognition_proposer")({"suggestions": [{"type": "add"}]})
    assert found(report) == [
        ("suggestions[0].path", "alternative_missing"),
        ("suggestions[0].value", "alternative_missing"),
    ]


def test_action_interface_checks_each_score_of_the_row():
    output = {"actions": [{"name": "n", "type": "t", "impact": 2, "effort": -1, "risk": "high"}]}
    assert found(validator("action_interface")(output)) == [
        ("actions[0].impact", "out_of_range"),
        ("actions[0].effort", "out_of_range"),
        ("actions[0].risk", "wrong_type"),
    ]


def test_semantic_memory_manager_category_is_an_open_list():
    output = {"tasks": [{"task": "consolidate", "category": "plus_tard"}]}
    report = validator("semantic_memory_manager")(output, frozenset({"consolidate"}))
    assert report.compliant
    assert warned(report) == [("tasks[0].category", "not_in_enum")]


def test_semantic_memory_manager_task_must_be_a_known_alias():
    output = {"tasks": [{"task": "defrag", "category": "urgent"}]}
    assert found(validator("semantic_memory_manager")(output, frozenset({"consolidate"}))) == [
        ("tasks[0].task", "unknown_id")
    ]


def test_reasoning_episode_questions_are_objects_or_strings():
    base = {"summary": "s", "confidence": 0.5, "hypothesis": {}}
    validate = validator("reasoning_episode")
    assert validate({**base, "questions": [{"text": "q"}, "why?"], "tests": ["t", {"d": 1}]}).compliant
    assert found(validate({**base, "questions": [1]})) == [("questions[0]", "wrong_type")]


def test_reasoning_episode_confidence_or_final_confidence():
    validate = validator("reasoning_episode")
    assert validate({"summary": "s", "final_confidence": 1, "hypothesis": {}}).compliant
    report = validate({"summary": "s", "hypothesis": {}})
    assert found(report) == [("confidence", "alternative_missing")]


def test_learning_curriculum_planner_review_after_is_integral():
    validate = validator("learning_curriculum_planner")
    assert validate({"focus_modules": ["nlg"], "review_after": 90}).compliant
    assert found(validate({"focus_modules": ["nlg"], "review_after": 1.5})) == [("review_after", "wrong_type")]


def test_a_field_effect_travels_with_its_violation():
    violation = only(validator("phenomenal_mode_manager")({"mode": "sieste"}))
    assert violation.effect == "Détermine le mode courant et ajuste les budgets de jobs."


def _all_rules_of(name: str) -> list[Any]:
    return [rule_from_row(r.path, r.type, r.required, r.effect) for r in BY_NAME[name].rows]


def test_rules_of_a_contract_can_be_compiled_twice_into_equal_judges():
    first, second = compile_contract(_all_rules_of("auto_evolution")), compile_contract(_all_rules_of("auto_evolution"))
    output = {"accepted": "yes", "intention": {}, "evaluation": {"score": []}}
    assert found(first(output)) == found(second(output))
    assert found(first(output)) == [
        ("accepted", "wrong_type"),
        ("intention.action_type", "missing_required"),
        ("evaluation.score", "wrong_type"),
    ]
