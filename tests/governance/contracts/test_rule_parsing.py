"""Reading seed 000's rows into rules (governance/contract_rules.py): each type word form the seed
writes, the requirement words, the field cells and their paths, and every row of the shipped
catalog converted and compiled.
"""

from __future__ import annotations

import pytest

from governance.contracts.codegen import compile_contract
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
from governance.contracts.validator import split_path
from tests.governance.contracts.validators import CONTRACTS, NNBSP

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
