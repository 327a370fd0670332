"""The type language of seed 000 and the compiled validator (governance/contracts/rules.py): each
word form the seed writes, the paths, alternatives and conditions, and every violation code with
the concrete path it names."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from governance.contracts.catalog import ContractDoc, parse
from governance.contracts.rules import (
    Code,
    Condition,
    Kind,
    Requirement,
    RowError,
    TypeRule,
    parse_paths,
    parse_required,
    parse_type,
    rule_from_row,
)
from governance.contracts.validator import Report, Violation, compile_contract, first_unserializable, split_path

SEED = Path(__file__).resolve().parents[2] / "governance" / "catalog" / "llm_output_contracts.md"  # seed 000
NNBSP = "\u202f"  # the narrow no-break space the seed writes in most bounds

CONTRACTS: list[ContractDoc] = parse(SEED.read_text(encoding="utf-8"))
BY_NAME = {c.name: c for c in CONTRACTS}


def validator(name: str):
    doc = BY_NAME[name]
    return compile_contract([rule_from_row(r.path, r.type, r.required, r.effect) for r in doc.rows])


def one_field(type_words: str, required: str = "Oui", path: str = "`f`"):
    """A contract of a single row, as the seed would write it."""
    return compile_contract([rule_from_row(path, type_words, required, "effect of f")])


def found(report: Report) -> list[tuple[str, str]]:
    return [(v.path, str(v.code)) for v in report.violations]


def warned(report: Report) -> list[tuple[str, str]]:
    return [(w.path, str(w.code)) for w in report.warnings]


def only(report: Report) -> Violation:
    assert len(report.violations) == 1, found(report)
    return report.violations[0]


# --- parse_type: one test per word form of the seed ------------------------------------------------

TYPE_WORDS = [
    ("`str`", TypeRule(Kind.STRING)),
    ("chaîne", TypeRule(Kind.STRING)),
    ("`str` non vide", TypeRule(Kind.STRING, non_empty=True)),
    ("nombre", TypeRule(Kind.NUMBER)),
    ("nombres", TypeRule(Kind.NUMBER)),
    ("`float`", TypeRule(Kind.NUMBER)),
    ("nombre ∈ [0, 1]", TypeRule(Kind.NUMBER, minimum=0.0, maximum=1.0)),
    (f"nombre ∈ [0,{NNBSP}1]", TypeRule(Kind.NUMBER, minimum=0.0, maximum=1.0)),
    (f"nombres ∈ [0,{NNBSP}1]", TypeRule(Kind.NUMBER, minimum=0.0, maximum=1.0)),
    (f"`float` ∈ [0,{NNBSP}1]", TypeRule(Kind.NUMBER, minimum=0.0, maximum=1.0)),
    (f"`float` ∈ [-1,{NNBSP}1]", TypeRule(Kind.NUMBER, minimum=-1.0, maximum=1.0)),
    ("`int` (minutes)", TypeRule(Kind.INTEGER)),
    ("entier", TypeRule(Kind.INTEGER)),
    ("timestamp float", TypeRule(Kind.NUMBER, minimum=0.0)),
    ("booléen", TypeRule(Kind.BOOLEAN)),
    ("liste", TypeRule(Kind.LIST)),
    ("liste de `str`", TypeRule(Kind.LIST_OF_STRINGS)),
    ("liste de chaînes", TypeRule(Kind.LIST_OF_STRINGS)),
    ("liste de mappings", TypeRule(Kind.LIST_OF_MAPPINGS)),
    ("liste de mappings (`content`, `prior`)", TypeRule(Kind.LIST_OF_MAPPINGS, keys=("content", "prior"))),
    (
        "liste de mappings (`description`, `cost_est`, `expected_information_gain`)",
        TypeRule(Kind.LIST_OF_MAPPINGS, keys=("description", "cost_est", "expected_information_gain")),
    ),
    ("liste d\u2019objets", TypeRule(Kind.LIST_OF_MAPPINGS)),
    (
        "liste d\u2019objets (`label`, `salience`, `confidence`, `evidence`, `source_ids`)",
        TypeRule(Kind.LIST_OF_MAPPINGS, keys=("label", "salience", "confidence", "evidence", "source_ids")),
    ),
    (
        "liste d\u2019objets (`subject`, `verb`, `object`, `confidence`, `evidence`)",
        TypeRule(Kind.LIST_OF_MAPPINGS, keys=("subject", "verb", "object", "confidence", "evidence")),
    ),
    (
        "liste d\u2019objets (id/kind/text/tags/salience)",
        TypeRule(Kind.LIST_OF_MAPPINGS, keys=("id", "kind", "text", "tags", "salience")),
    ),
    ("liste d\u2019objets ou de chaînes", TypeRule(Kind.LIST_OF_MAPPINGS_OR_STRINGS)),
    ("liste (objets ou chaînes)", TypeRule(Kind.LIST_OF_MAPPINGS_OR_STRINGS)),
    ("mapping", TypeRule(Kind.MAPPING)),
    ("mapping clé/valeur", TypeRule(Kind.MAPPING)),
    ("mapping (`notes`, `confidence`)", TypeRule(Kind.MAPPING, keys=("notes", "confidence"))),
    ("`dict`", TypeRule(Kind.MAPPING)),
    (
        "`dict` (`definition`/`examples`/`counterexample`)",
        TypeRule(Kind.MAPPING, keys=("definition", "examples", "counterexample")),
    ),
    ("mapping sérialisable", TypeRule(Kind.MAPPING, serializable=True)),
    ("mapping clé/valeur sérialisable", TypeRule(Kind.MAPPING, serializable=True)),
    ("sérialisable", TypeRule(Kind.SERIALIZABLE)),
    ("valeur sérialisable", TypeRule(Kind.SERIALIZABLE)),
    ("nombre ou `str`", TypeRule(Kind.NUMBER_OR_STRING)),
    ("`str` (`ok/refused/error`)", TypeRule(Kind.STRING, enum=("ok", "refused", "error"))),
    ("`str` (`above`/`below`)", TypeRule(Kind.STRING, enum=("above", "below"))),
    ("`str` (`travail`/`flanerie`)", TypeRule(Kind.STRING, enum=("travail", "flanerie"))),
    (
        "`str` (`urgent`, `court_terme`, `long_terme`, …)",
        TypeRule(Kind.STRING, enum=("urgent", "court_terme", "long_terme"), enum_open=True),
    ),
    ("identifiant numérique", TypeRule(Kind.NUMERIC_ID)),
    ("identifiant numérique existant", TypeRule(Kind.NUMERIC_ID, existing=True)),
    ("alias reconnu", TypeRule(Kind.STRING, non_empty=True, existing=True)),
    ("alias/id", TypeRule(Kind.ID, existing=True)),
    ("alias fourni (`m0`, `m1`, …) ou id existant", TypeRule(Kind.ID, existing=True)),
    ("liste/chemin", TypeRule(Kind.PATH)),
    ("libre", TypeRule(Kind.ANY)),
    ("libre (stocké tel quel)", TypeRule(Kind.ANY)),
    ("valeur libre", TypeRule(Kind.ANY)),
]


@pytest.mark.parametrize(("words", "expected"), TYPE_WORDS, ids=[w for w, _ in TYPE_WORDS])
def test_type_words_read_as_a_rule(words, expected):
    assert parse_type(words) == expected


def test_every_type_word_of_the_seed_is_in_the_table_above():
    """A new word form in the seed must come with its own test."""
    tested = {w for w, _ in TYPE_WORDS}
    in_seed = {row.type for doc in CONTRACTS for row in doc.rows}
    assert in_seed - tested == set()


@pytest.mark.parametrize("words", ["tuple", "liste de nombres", "`str` vide", "ensemble", ""])
def test_unknown_type_words_raise_a_row_error_quoting_them(words):
    with pytest.raises(RowError, match=r"unknown type words: "):
        parse_type(words)


def test_a_row_error_quotes_the_words():
    with pytest.raises(RowError) as caught:
        parse_type("tuple (a, b)")
    assert "'tuple (a, b)'" in str(caught.value)


@pytest.mark.parametrize(
    ("rule", "text"),
    [
        (TypeRule(Kind.NUMBER, minimum=0.0, maximum=1.0), "number in [0, 1]"),
        (TypeRule(Kind.NUMBER, minimum=-1.0, maximum=0.5), "number in [-1, 0.5]"),
        (TypeRule(Kind.STRING, non_empty=True), "non-empty string"),
        (TypeRule(Kind.STRING, enum=("ok", "error")), "string (one of ok, error)"),
        (TypeRule(Kind.STRING, enum=("a", "b"), enum_open=True), "string (one of a, b, …)"),
        (TypeRule(Kind.LIST_OF_MAPPINGS_OR_STRINGS), "list of objects or strings"),
        (TypeRule(Kind.ID), "alias or id"),
    ],
)
def test_type_rules_describe_themselves_in_english(rule, text):
    assert rule.describe() == text


# --- parse_required --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ("Non", (Requirement.NO, None, False)),
        ("Oui", (Requirement.YES, None, False)),
        ("oui", (Requirement.YES, None, False)),
        ("Oui (par lien)", (Requirement.YES, None, False)),
        ("Oui (par boost)", (Requirement.YES, None, False)),
        ("Oui (par entrée)", (Requirement.YES, None, False)),
        ("Oui (par suggestion)", (Requirement.YES, None, False)),
        ("Oui (implicite)", (Requirement.IMPLICIT, None, False)),
        (
            "Oui (opérations `upsert_belief` / `add_evidence`)",
            (Requirement.CONDITIONAL, Condition("operation", ("upsert_belief", "add_evidence")), False),
        ),
        ("Oui (opération `add_event`)", (Requirement.CONDITIONAL, Condition("operation", ("add_event",)), False)),
        ("Oui (sauf usage de `priority_delta`)", (Requirement.YES, None, True)),
        ("Oui (alternative)", (Requirement.YES, None, True)),
    ],
)
def test_required_words_read_as_a_requirement(words, expected):
    assert parse_required(words) == expected


@pytest.mark.parametrize("words", ["Peut-être", "Oui (souvent)", ""])
def test_unknown_required_words_raise_a_row_error(words):
    with pytest.raises(RowError, match="unknown requirement words"):
        parse_required(words)


# --- parse_paths and split_path --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cell", "paths"),
    [
        ("`summary`", ("summary",)),
        ("`intent.label`", ("intent.label",)),
        ("`rules[*].id`", ("rules[*].id",)),
        ("`patches[*].assessment.should_promote`", ("patches[*].assessment.should_promote",)),
        ("`answer`/`text`", ("answer", "text")),
        ("`state_summary`/`summary`", ("state_summary", "summary")),
        ("`tone`/`sentiment`/`priority`/`urgency`", ("tone", "sentiment", "priority", "urgency")),
        ("`risks` / `opportunities`", ("risks", "opportunities")),
        ("`rankings[*].adjusted_score` ou `score`", ("rankings[*].adjusted_score", "rankings[*].score")),
        ("`rankings[*].rationale`/`reason`", ("rankings[*].rationale", "rankings[*].reason")),
        ("`links[*].from`/`src`", ("links[*].from", "links[*].src")),
        ("`evaluation.score` / `impact`", ("evaluation.score", "evaluation.impact")),
        ("`diagnostics.besoins` / `diagnostics.questions`", ("diagnostics.besoins", "diagnostics.questions")),
        ("`overrides.rerank` / `overrides.compose`", ("overrides.rerank", "overrides.compose")),
        (
            "`actions[*].impact`/`effort`/`risk`",
            ("actions[*].impact", "actions[*].effort", "actions[*].risk"),
        ),
    ],
)
def test_field_cells_read_as_paths(cell, paths):
    assert parse_paths(cell) == (paths, False, False)


def test_the_whole_output_row_is_about_the_output_itself():
    assert parse_paths("_toute réponse_") == (("",), False, True)


@pytest.mark.parametrize("cell", ["autres champs", "autres champs (`insights`, `meta`, …)"])
def test_other_fields_rows_open_the_output(cell):
    assert parse_paths(cell) == ((), True, False)


def test_a_field_cell_without_a_path_is_a_row_error():
    with pytest.raises(RowError, match="no field path"):
        parse_paths("summary")


@pytest.mark.parametrize(
    ("path", "segments"),
    [
        ("summary", ("summary",)),
        ("intent.label", ("intent", "label")),
        ("rankings[*].adjusted_score", ("rankings", "*", "adjusted_score")),
        ("patches[*].assessment.should_promote", ("patches", "*", "assessment", "should_promote")),
        ("grid[*][*].cell", ("grid", "*", "*", "cell")),
        ("rules[*]", ("rules", "*")),
    ],
)
def test_split_path_turns_wildcards_into_star_segments(path, segments):
    assert split_path(path) == segments


# --- rule_from_row ---------------------------------------------------------------------------------


def test_a_required_row_with_two_paths_is_an_alternative():
    rule = rule_from_row("`answer`/`text`", "`str` non vide", "Oui", "Crée une suggestion")
    assert rule.paths == ("answer", "text")
    assert rule.alternatives
    assert rule.effect == "Crée une suggestion"


def test_an_optional_row_with_two_paths_is_two_independent_fields():
    rule = rule_from_row("`tone`/`sentiment`", "`str`", "Non")
    assert not rule.alternatives


def test_a_cross_row_alternative_has_a_group():
    assert rule_from_row("`priority`", "nombre ∈ [0, 1]", "Oui (sauf usage de `priority_delta`)").group == "alternative"
    assert rule_from_row("`priority_delta`", "nombre", "Oui (alternative)").group == "alternative"
    assert rule_from_row("`confidence`", "nombre", "Non").group == ""


def test_the_conditional_row_of_belief_graph_orchestrator_reads_the_operation():
    rule = rule_from_row("`result.belief_id`", "`str`", "Oui (opérations `upsert_belief` / `add_evidence`)")
    assert rule.requirement is Requirement.CONDITIONAL
    assert rule.condition == Condition("operation", ("upsert_belief", "add_evidence"))


def test_other_fields_and_whole_output_rows_are_flagged():
    assert rule_from_row("autres champs", "sérialisable", "Non").other_fields
    assert rule_from_row("_toute réponse_", "mapping sérialisable", "Non").whole_output


ALL_ROWS = [(doc.name, row) for doc in CONTRACTS for row in doc.rows]


def test_the_seed_has_370_rows_to_convert():
    assert len(ALL_ROWS) == 370


@pytest.mark.parametrize("doc", CONTRACTS, ids=[d.name for d in CONTRACTS])
def test_every_seed_row_converts_to_a_rule(doc):
    for row in doc.rows:
        rule = rule_from_row(row.path, row.type, row.required, row.effect)  # never a RowError
        assert rule.effect == row.effect
        assert rule.paths or rule.other_fields
        for path in rule.paths:
            assert "`" not in path
            assert " " not in path


@pytest.mark.parametrize("doc", CONTRACTS, ids=[d.name for d in CONTRACTS])
def test_every_seed_contract_compiles_and_judges_an_empty_object(doc):
    validate = compile_contract([rule_from_row(r.path, r.type, r.required, r.effect) for r in doc.rows])
    report = validate({})
    required_rows = [r for r in doc.rows if r.required.lower().startswith("oui") and "implicite" not in r.required]
    unconditional = [r for r in required_rows if "opération" not in r.required and "[*]" not in r.path]
    assert report.compliant == (not unconditional)
    for violation in report.violations:
        assert "*" not in violation.path
        assert violation.code in {Code.MISSING_REQUIRED, Code.ALTERNATIVE_MISSING}


# --- Each word form, validated ---------------------------------------------------------------------


def test_str_accepts_any_string_even_empty():
    validate = one_field("`str`")
    assert validate({"f": "x"}).compliant
    assert validate({"f": ""}).compliant


def test_str_refuses_a_number():
    violation = only(one_field("`str`")({"f": 3}))
    assert (violation.path, violation.code) == ("f", Code.WRONG_TYPE)
    assert violation.message == "expected string, got integer"
    assert violation.effect == "effect of f"


@pytest.mark.parametrize("value", ["", "   ", "\n\t"])
def test_non_empty_str_refuses_blank_strings(value):
    violation = only(one_field("`str` non vide")({"f": value}))
    assert (violation.path, violation.code, violation.message) == ("f", Code.EMPTY_STRING, "the string is empty")


def test_non_empty_str_accepts_text_and_refuses_other_types():
    validate = one_field("`str` non vide")
    assert validate({"f": " x "}).compliant
    assert found(validate({"f": ["x"]})) == [("f", "wrong_type")]


@pytest.mark.parametrize("value", [0, 1, 0.0, 1.0, 0.25, 1e-9])
def test_a_number_in_zero_one_accepts_the_closed_interval(value):
    assert one_field(f"nombre ∈ [0,{NNBSP}1]")({"f": value}).compliant


@pytest.mark.parametrize(("value", "text"), [(1.5, "1.5 is outside [0, 1]"), (-0.1, "-0.1 is outside [0, 1]")])
def test_a_number_outside_zero_one_is_out_of_range(value, text):
    violation = only(one_field("nombre ∈ [0, 1]")({"f": value}))
    assert (violation.path, violation.code, violation.message) == ("f", Code.OUT_OF_RANGE, text)


@pytest.mark.parametrize(("value", "got"), [("0.5", "string"), (True, "boolean"), (None, "null"), ([0.5], "list")])
def test_a_number_of_another_type_is_wrong_type(value, got):
    violation = only(one_field("nombre ∈ [0, 1]")({"f": value}))
    assert (violation.code, violation.message) == (Code.WRONG_TYPE, f"expected number in [0, 1], got {got}")


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_number_that_is_not_json_is_not_serializable(value):
    violation = only(one_field("nombre")({"f": value}))
    assert (violation.path, violation.code) == ("f", Code.NOT_SERIALIZABLE)
    assert "is not a JSON number" in violation.message


def test_a_float_in_minus_one_one_is_bounded_on_both_sides():
    validate = one_field(f"`float` ∈ [-1,{NNBSP}1]")
    assert validate({"f": -1}).compliant
    assert validate({"f": 1.0}).compliant
    assert validate({"f": -0.5}).compliant
    assert only(validate({"f": -1.01})).message == "-1.01 is outside [-1, 1]"
    assert found(validate({"f": 2})) == [("f", "out_of_range")]


def test_a_plain_float_accepts_any_finite_number():
    validate = one_field("`float`")
    assert validate({"f": -1e300}).compliant
    assert validate({"f": 10**30}).compliant


@pytest.mark.parametrize("words", ["`int` (minutes)", "entier"])
def test_an_integer_accepts_integers_and_integral_floats(words):
    validate = one_field(words)
    assert validate({"f": 30}).compliant
    assert validate({"f": -3}).compliant
    assert validate({"f": 30.0}).compliant


@pytest.mark.parametrize("words", ["`int` (minutes)", "entier"])
@pytest.mark.parametrize(("value", "got"), [(30.5, "number"), ("30", "string"), (True, "boolean")])
def test_an_integer_refuses_fractions_strings_and_booleans(words, value, got):
    violation = only(one_field(words)({"f": value}))
    assert (violation.code, violation.message) == (Code.WRONG_TYPE, f"expected integer, got {got}")


def test_an_integer_that_is_not_json_is_not_serializable():
    assert found(one_field("entier")({"f": math.nan})) == [("f", "not_serializable")]
    assert found(one_field("entier")({"f": math.inf})) == [("f", "not_serializable")]


def test_a_timestamp_float_is_a_non_negative_number():
    validate = one_field("timestamp float")
    assert validate({"f": 1_700_000_000.5}).compliant
    assert validate({"f": 0}).compliant
    assert only(validate({"f": -1.0})).message == "-1.0 is outside [0, inf]"
    assert found(validate({"f": "2024-01-01"})) == [("f", "wrong_type")]


def test_a_boolean_accepts_only_true_and_false():
    validate = one_field("booléen")
    assert validate({"f": True}).compliant
    assert validate({"f": False}).compliant
    for value in (1, 0, "true", None):
        assert found(validate({"f": value})) == [("f", "wrong_type")]


@pytest.mark.parametrize("words", ["liste de `str`", "liste de chaînes"])
def test_a_list_of_strings_names_the_bad_item(words):
    validate = one_field(words)
    assert validate({"f": []}).compliant
    assert validate({"f": ["a", ""]}).compliant
    violation = only(validate({"f": ["a", "b", 3]}))
    assert (violation.path, violation.code) == ("f[2]", Code.WRONG_TYPE)
    assert violation.message == "expected a string, got integer"


@pytest.mark.parametrize("words", ["liste de `str`", "liste de chaînes"])
def test_a_list_of_strings_serialised_in_a_string_has_a_hint(words):
    violation = only(one_field(words)({"f": '["a", "b"]'}))
    assert (violation.path, violation.code) == ("f", Code.WRONG_TYPE)
    assert violation.message == "expected list of strings, got string"
    assert violation.hint == "the value is a JSON list serialised inside a string: send it as JSON, not as text"


def test_a_plain_string_for_a_list_has_no_hint():
    assert only(one_field("liste de `str`")({"f": "a, b"})).hint == ""
    assert only(one_field("liste de `str`")({"f": "[not json"})).hint == ""


@pytest.mark.parametrize("words", ["liste de mappings", "liste d\u2019objets"])
def test_a_list_of_objects_names_every_bad_item(words):
    validate = one_field(words)
    assert validate({"f": [{}, {"a": 1}]}).compliant
    report = validate({"f": [{}, "x", 2]})
    assert found(report) == [("f[1]", "wrong_type"), ("f[2]", "wrong_type")]
    assert report.violations[0].message == "expected an object, got string"


def test_an_object_serialised_inside_a_list_item_has_a_hint():
    violation = only(one_field("liste de mappings")({"f": ['{"label": "x"}']}))
    assert violation.path == "f[0]"
    assert violation.hint == "an object serialised inside a string: send it as JSON, not as text"


def test_documented_keys_of_list_items_make_other_keys_warnings():
    validate = one_field("liste de mappings (`content`, `prior`)")
    report = validate({"f": [{"content": "c", "prior": 0.2}, {"content": "d", "weight": 1}]})
    assert report.compliant
    assert warned(report) == [("f[1].weight", "unknown_field")]


@pytest.mark.parametrize("words", ["liste d\u2019objets ou de chaînes", "liste (objets ou chaînes)"])
def test_a_list_of_objects_or_strings(words):
    validate = one_field(words)
    assert validate({"f": [{"q": 1}, "question?"]}).compliant
    violation = only(validate({"f": ["ok", 4, {}]}))
    assert (violation.path, violation.code) == ("f[1]", Code.WRONG_TYPE)
    assert violation.message == "expected an object or a string, got integer"


def test_a_bare_list_accepts_items_of_any_kind():
    validate = one_field("liste")
    assert validate({"f": [1, "a", {}, None, []]}).compliant
    assert found(validate({"f": {"a": 1}})) == [("f", "wrong_type")]


@pytest.mark.parametrize("words", ["mapping", "mapping clé/valeur", "`dict`"])
def test_a_mapping_accepts_objects_only(words):
    validate = one_field(words)
    assert validate({"f": {}}).compliant
    assert validate({"f": {"a": {"b": [1]}}}).compliant
    assert only(validate({"f": []})).message == "expected object, got list"


@pytest.mark.parametrize("words", ["mapping", "`dict`"])
def test_a_mapping_serialised_in_a_string_has_a_hint(words):
    violation = only(one_field(words)({"f": '{"a": 1}'}))
    assert (violation.path, violation.code) == ("f", Code.WRONG_TYPE)
    assert violation.hint == "the value is a JSON object serialised inside a string: send it as JSON, not as text"


def test_a_list_serialised_in_a_string_is_no_hint_for_a_mapping():
    assert only(one_field("mapping")({"f": "[1, 2]"})).hint == ""


def test_documented_keys_of_a_mapping_make_other_keys_warnings():
    validate = one_field("`dict` (`definition`/`examples`/`counterexample`)", "Non")
    report = validate({"f": {"definition": "d", "extra": 1}})
    assert report.compliant
    assert warned(report) == [("f.extra", "unknown_field")]


def test_a_plain_mapping_may_hold_non_json_values():
    assert one_field("mapping")({"f": {"a": math.nan}}).compliant


@pytest.mark.parametrize("words", ["mapping sérialisable", "mapping clé/valeur sérialisable"])
def test_a_serializable_mapping_names_the_first_non_json_value(words):
    validate = one_field(words)
    assert validate({"f": {"a": {"b": [1, "x", None, True, 2.5]}}}).compliant
    violation = only(validate({"f": {"a": {"b": [1, math.nan]}}}))
    assert (violation.path, violation.code, violation.message) == (
        "f.a.b[1]",
        Code.NOT_SERIALIZABLE,
        "nan is not a JSON number",
    )


def test_a_serializable_mapping_refuses_objects_and_non_string_keys():
    validate = one_field("mapping sérialisable")
    violation = only(validate({"f": {"when": object()}}))
    assert (violation.path, violation.message) == ("f.when", "a object is not JSON")
    violation = only(validate({"f": {1: "x"}}))
    assert (violation.path, violation.message) == ("f", "key 1 is not a string")
    assert only(validate({"f": {"s": {1, 2}}})).message == "a set is not JSON"


@pytest.mark.parametrize("words", ["sérialisable", "valeur sérialisable"])
def test_serializable_accepts_any_json_value(words):
    validate = one_field(words)
    for value in (None, 1, "x", [1, {"a": None}], {"a": [True]}):
        assert validate({"f": value}).compliant


@pytest.mark.parametrize("words", ["sérialisable", "valeur sérialisable"])
def test_serializable_refuses_python_objects_and_nan(words):
    validate = one_field(words)
    assert found(validate({"f": object()})) == [("f", "not_serializable")]
    assert found(validate({"f": [1, math.inf]})) == [("f[1]", "not_serializable")]
    assert found(validate({"f": (1, 2)})) == [("f", "not_serializable")]


def test_a_number_or_a_string_accepts_both_and_nothing_else():
    validate = one_field("nombre ou `str`")
    assert validate({"f": 0.7}).compliant
    assert validate({"f": "high"}).compliant
    assert found(validate({"f": True})) == [("f", "wrong_type")]
    assert found(validate({"f": {}})) == [("f", "wrong_type")]
    assert found(validate({"f": math.nan})) == [("f", "not_serializable")]


def test_the_enum_ok_refused_error_is_closed():
    validate = one_field("`str` (`ok/refused/error`)")
    for value in ("ok", "refused", "error"):
        assert validate({"f": value}).compliant
    violation = only(validate({"f": "OK"}))
    assert (violation.path, violation.code) == ("f", Code.NOT_IN_ENUM)
    assert violation.message == "'OK' is not one of ok, refused, error"


def test_the_enum_above_below_is_closed():
    validate = one_field("`str` (`above`/`below`)")
    assert validate({"f": "above"}).compliant
    assert validate({"f": "below"}).compliant
    assert found(validate({"f": "up"})) == [("f", "not_in_enum")]
    assert found(validate({"f": 1})) == [("f", "wrong_type")]


def test_the_enum_travail_flanerie_is_closed():
    validate = one_field("`str` (`travail`/`flanerie`)")
    assert validate({"f": "flanerie"}).compliant
    assert only(validate({"f": "flânerie"})).message == "'flânerie' is not one of travail, flanerie"


def test_an_open_enum_only_warns_on_another_value():
    validate = one_field("`str` (`urgent`, `court_terme`, `long_terme`, …)")
    assert validate({"f": "court_terme"}).warnings == []
    report = validate({"f": "moyen_terme"})
    assert report.compliant
    (warning,) = report.warnings
    assert (warning.path, warning.code) == ("f", Code.NOT_IN_ENUM)
    assert warning.message == "'moyen_terme' is not one of urgent, court_terme, long_terme (open list)"


def test_an_open_enum_still_refuses_another_type():
    assert found(one_field("`str` (`urgent`, `court_terme`, `long_terme`, …)")({"f": 3})) == [("f", "wrong_type")]


def test_a_numeric_id_accepts_integers_only():
    validate = one_field("identifiant numérique")
    assert validate({"f": 12}).compliant
    for value in (12.0, True, None, [12]):
        assert found(validate({"f": value})) == [("f", "wrong_type")]


def test_a_numeric_id_written_as_a_string_is_wrong_type_with_a_hint():
    violation = only(one_field("identifiant numérique existant")({"f": "12"}))
    assert (violation.path, violation.code) == ("f", Code.WRONG_TYPE)
    assert violation.message == "expected numeric id, got string"
    assert violation.hint == "a numeric id written as a string is not converted by the runtime: send the number"


def test_a_text_id_that_is_not_a_number_has_no_hint():
    assert only(one_field("identifiant numérique")({"f": "doc-12"})).hint == ""


def test_an_existing_numeric_id_is_checked_against_the_known_ids():
    validate = one_field("identifiant numérique existant")
    assert validate({"f": 12}, frozenset({"12", "13"})).compliant
    violation = only(validate({"f": 14}, frozenset({"12", "13"})))
    assert (violation.path, violation.code) == ("f", Code.UNKNOWN_ID)
    assert violation.message == "14 is not one of the ids the input offered"


def test_without_known_ids_no_id_is_unknown():
    assert one_field("identifiant numérique existant")({"f": 999}).compliant
    assert one_field("alias/id")({"f": "m9"}).compliant


def test_a_numeric_id_that_need_not_exist_ignores_the_known_ids():
    assert one_field("identifiant numérique")({"f": 999}, frozenset({"1"})).compliant


@pytest.mark.parametrize("words", ["alias/id", "alias fourni (`m0`, `m1`, …) ou id existant"])
def test_an_alias_or_id_must_be_known(words):
    validate = one_field(words)
    known = frozenset({"m0", "m1", "42"})
    assert validate({"f": "m0"}, known).compliant
    assert validate({"f": 42}, known).compliant
    violation = only(validate({"f": "m7"}, known))
    assert (violation.path, violation.code, violation.message) == (
        "f",
        Code.UNKNOWN_ID,
        "'m7' is not one of the ids the input offered",
    )


@pytest.mark.parametrize("words", ["alias/id", "alias fourni (`m0`, `m1`, …) ou id existant"])
def test_an_alias_or_id_of_another_type(words):
    validate = one_field(words)
    assert found(validate({"f": 1.5}, frozenset({"1.5"}))) == [("f", "wrong_type")]
    assert found(validate({"f": True})) == [("f", "wrong_type")]
    assert found(validate({"f": {"id": "m0"}})) == [("f", "wrong_type")]


def test_an_empty_alias_is_an_empty_string():
    violation = only(one_field("alias/id")({"f": " "}, frozenset({"m0"})))
    assert (violation.path, violation.code, violation.message) == ("f", Code.EMPTY_STRING, "the id is empty")


def test_a_recognised_alias_must_name_a_known_task():
    validate = one_field("alias reconnu")
    assert validate({"f": "consolidate"}, frozenset({"consolidate"})).compliant
    assert found(validate({"f": "unknown_task"}, frozenset({"consolidate"}))) == [("f", "unknown_id")]
    assert found(validate({"f": ""}, frozenset({"consolidate"}))) == [("f", "empty_string")]
    assert found(validate({"f": 3})) == [("f", "wrong_type")]


def test_a_path_is_a_dotted_string_or_a_list_of_segments():
    validate = one_field("liste/chemin")
    assert validate({"f": "identity.where"}).compliant
    assert validate({"f": ["identity", "goals", 0]}).compliant
    assert found(validate({"f": ""})) == [("f", "empty_string")]
    assert found(validate({"f": 3})) == [("f", "wrong_type")]
    assert found(validate({"f": ["a", 1.5]})) == [("f", "wrong_type")]


@pytest.mark.parametrize("words", ["libre", "libre (stocké tel quel)", "valeur libre"])
def test_free_values_accept_anything(words):
    validate = one_field(words)
    for value in ("x", 1, [1], {"a": object()}, math.nan, None):
        assert validate({"f": value}).compliant


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
    assert validate(good).warnings == []
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
    assert report.warnings == []


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
    assert report.warnings == []
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
    assert report.violations == []
    assert report.warnings == []


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
    report = Report(warnings=[Violation("x", Code.UNKNOWN_FIELD, "not in the contract")])
    assert report.compliant
    assert not Report(violations=[Violation("x", Code.WRONG_TYPE, "m")]).compliant


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
