"""Each type word form of seed 000, validated (governance/contract_rules.py): what a compiled rule
accepts, what it refuses with which code, and the hints it gives for values sent as text.
"""

from __future__ import annotations

import math

import pytest

from governance.contracts.rules import Code
from tests.governance.contracts.validators import NNBSP, found, one_field, only, warned

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
    assert validate({"f": "court_terme"}).warnings == ()
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
