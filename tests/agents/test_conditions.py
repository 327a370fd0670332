"""Manifest conditions as their authors see them: what holds, what is refused, and what the errors say."""

from __future__ import annotations

import builtins
import math
from typing import Any

import pytest

from agents.conditions import (
    Condition,
    ConditionError,
    ConditionEvaluationError,
    ConditionSyntaxError,
    holds,
    parse,
)

JOB: dict[str, Any] = {
    "urls": ["https://a.example", "https://b.example", "https://c.example"],
    "scores": [0.9, 0.4, 0.7],
    "input": {"urls": ["https://a.example"], "options": {}},
    "output": {"violations": []},
    "metrics": {"tokens": 3200},
    "confidence": 0.6,
    "error_count": 4,
    "human_required": False,
    "dryRun": True,
}


def job(**changes: Any) -> dict[str, Any]:
    return {**JOB, **changes}


@pytest.mark.parametrize(
    ("expression", "context", "expected"),
    [
        ("urls.length > 0 && urls.length <= 1000", JOB, True),
        ("urls.length > 0 && urls.length <= 1000", job(urls=[]), False),
        ("urls.length > 0 && urls.length <= 1000", job(urls=["u"] * 1001), False),
        ("scores.length === urls.length", JOB, True),
        ("scores.length === urls.length", job(scores=[0.9]), False),
        ("input.urls.length > 0", JOB, True),
        ("input.urls.length > 0", job(input={"urls": []}), False),
        ("output.violations.length >= 0", JOB, True),
        ("confidence < 0.7", JOB, True),
        ("confidence < 0.7", job(confidence=0.7), False),
        ("error_count > 3", JOB, True),
        ("error_count > 3", job(error_count=3), False),
        ("human_required == true", job(human_required=True), True),
        ("human_required == true", JOB, False),
        ("!dryRun || (metrics.tokens < 4000)", JOB, True),
        ("!dryRun || (metrics.tokens < 4000)", job(metrics={"tokens": 5000}), False),
        ("!dryRun || (metrics.tokens < 4000)", {"dryRun": False}, True),
    ],
)
def test_manifest_examples_hold_or_not_against_a_job_context(
    expression: str, context: dict[str, Any], expected: bool
) -> None:
    assert holds(expression, context) is expected


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("true || false && false", True),
        ("(true || false) && false", False),
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("10 - 4 - 3", 3),
        ("12 / 2 / 3", 2),
        ("7 % 4 * 2", 6),
        ("-2 * 3", -6),
        ("-7 % 3", -1),
        ("!false && false", False),
        ("1 < 2 == true", True),
        ("1 + 1 == 2 && 2 * 2 == 4", True),
        ("'ab' + 'cd'", "abcd"),
        ("1e3 + .5 + 2.5e-1", 1000.75),
        ("+3", 3),
    ],
)
def test_operators_bind_and_associate_as_in_javascript(expression: str, value: Any) -> None:
    assert parse(expression).evaluate({}) == value


def test_or_binds_looser_than_and_between_names() -> None:
    assert holds("a || b && c", {"a": True, "b": False, "c": False})


@pytest.mark.parametrize(
    "expression",
    ["false && missing.thing", "true || missing.thing", "false and missing.thing", "dryRun || missing[0]"],
)
def test_short_circuit_skips_the_side_that_would_fail(expression: str) -> None:
    parse(expression).evaluate(JOB)


@pytest.mark.parametrize(
    ("expression", "value"),
    [("0 || 'fallback'", "fallback"), ("1 && 2", 2), ("null && x", None), ("'' || 0", 0)],
)
def test_and_or_return_the_deciding_operand_like_javascript(expression: str, value: Any) -> None:
    assert parse(expression).evaluate({"x": 1}) == value


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("not dryRun or metrics.tokens < 4000", True),
        ("dryRun and error_count > 3", True),
        ("not human_required and not dryRun", False),
    ],
)
def test_python_style_words_mean_the_javascript_operators(expression: str, expected: bool) -> None:
    assert holds(expression, JOB) is expected


def test_not_binds_as_tightly_as_bang_unlike_python() -> None:
    assert parse("not 2 == 3").evaluate({}) is False


@pytest.mark.parametrize(
    ("expression", "length"),
    [
        ("urls.length", 3),
        ("name.length", 5),
        ("'abc'.length", 3),
        ("input.length", 2),
        ("input.options.length", 0),
        ("pair.length", 2),
        ("urls['length']", 3),
    ],
)
def test_length_counts_items_characters_and_keys(expression: str, length: int) -> None:
    assert parse(expression).evaluate(job(name="héllo", pair=("a", "b"))) == length


def test_a_length_key_of_an_object_wins_over_counting_its_keys() -> None:
    assert parse("page.length").evaluate({"page": {"length": 42, "title": "x"}}) == 42


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("urls[0]", "https://a.example"),
        ("urls[urls.length - 1]", "https://c.example"),
        ("urls[1.0]", "https://b.example"),
        ("urls[3]", None),
        ("urls[-1]", None),
        ("input['urls'][0]", "https://a.example"),
        ('headers["content-type"]', "text/html"),
        ("matrix[1][0]", 3),
        ("by_id[7].name", "seven"),
        ("'abc'[1]", "b"),
    ],
)
def test_index_access_reads_lists_strings_and_objects(expression: str, value: Any) -> None:
    context = job(headers={"content-type": "text/html"}, matrix=[[1, 2], [3, 4]], by_id={"7": {"name": "seven"}})
    assert parse(expression).evaluate(context) == value


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("input.missing === null", True),
        ("input.missing === undefined", True),
        ("null == undefined", True),
        ("reviewer == null", True),
        ("reviewer", False),
        ("!input.missing", True),
        ("null == false", False),
        ("null == 0", False),
    ],
)
def test_missing_keys_and_null_read_as_null(expression: str, expected: bool) -> None:
    assert holds(expression, job(reviewer=None)) is expected


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("true == 1", False),
        ("true === 1", False),
        ("false == 0", False),
        ("true != 1", True),
        ("flag === true", True),
        ("1 == 1.0", True),
        ("'1' == 1", False),
        ("flags == counts", False),
        ("urls == urls", True),
        ("limits == same_limits", True),
        ("limits == strict_limits", False),
    ],
)
def test_equality_is_strict_and_never_mixes_booleans_with_numbers(expression: str, expected: bool) -> None:
    context = job(
        flag=True,
        flags=[True, False],
        counts=[1, 0],
        limits={"max": 10, "strict": 1},
        same_limits={"strict": 1, "max": 10.0},
        strict_limits={"max": 10, "strict": True},
    )
    assert holds(expression, context) is expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, False),
        (0.0, False),
        ("", False),
        (None, False),
        (False, False),
        (math.nan, False),
        ([], True),
        ({}, True),
        ("0", True),
        (-1, True),
        (10**400, True),
    ],
)
def test_holds_uses_javascript_truthiness(value: Any, expected: bool) -> None:
    assert holds("value", {"value": value}) is expected


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        (r"'it\'s'", "it's"),
        (r'"say \"hi\""', 'say "hi"'),
        (r"'a\nb'.length", 3),
        (r"'\u00e9'", "é"),
        (r"'back\\slash'", "back\\slash"),
    ],
)
def test_string_literals_understand_backslash_escapes(expression: str, value: Any) -> None:
    assert parse(expression).evaluate({}) == value


@pytest.mark.parametrize(
    ("expression", "position", "fragment"),
    [
        ("urls.length >", 13, "expected a value, found the end of the expression"),
        ("a = 1", 2, "did you mean == ?"),
        ("foo()", 3, "function calls are not supported"),
        ("__import__('os')", 10, "function calls are not supported"),
        ("urls.length()", 11, "function calls are not supported"),
        ("().__class__", 1, "expected a value, found ')'"),
        ("x => x.length", 2, "arrow functions are not supported"),
        ("a; b", 1, "single expression"),
        ("`${a}`", 0, "template strings"),
        ("a & b", 2, "did you mean && ?"),
        ("a | b", 2, "did you mean || ?"),
        ("a ? b : c", 2, "unexpected '?'"),
        ("(urls.length > 0", 16, "expected ')'"),
        ("urls[0", 6, "expected ']'"),
        ("urls.", 5, "property name"),
        ("urls.length 3", 12, "expected an operator or the end of the expression, found '3'"),
        ("new Date()", 4, "found 'Date'"),
        ("x ** 2", 2, "found '**'"),
        ("x++", 1, "found '++'"),
        ("and x", 0, "found 'and'"),
        ("3items", 1, "right after a number"),
        ("'open", 0, "unterminated string"),
        (r"'\u12'", 1, "4 hex digits"),
        ("", 0, "empty"),
        ("   ", 0, "empty"),
    ],
)
def test_syntax_errors_say_what_was_expected_and_where(expression: str, position: int, fragment: str) -> None:
    with pytest.raises(ConditionSyntaxError) as caught:
        parse(expression)
    assert caught.value.position == position
    assert caught.value.expression == expression
    assert fragment in str(caught.value)
    assert f"column {position + 1}" in str(caught.value)


def test_a_condition_that_is_not_text_is_a_syntax_error() -> None:
    with pytest.raises(ConditionSyntaxError, match="must be text, not bool"):
        parse(True)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("expression", "fragment"),
    [
        ("scores2.length > 0", "unknown name 'scores2'"),
        ("error_count.length > 0", "'error_count' has no length: it is a number"),
        ("human_required.reason", "'human_required' has no property 'reason': it is a boolean"),
        ("input.missing.length > 0", "cannot read 'length' of 'input.missing' because it is null"),
        ("reviewer[0]", "cannot read 0 of 'reviewer' because it is null"),
        ("reviewer < 0.7", "cannot apply '<' to 'reviewer' (null) and '0.7' (a number)"),
        ("urls < 3", "cannot apply '<' to 'urls' (an array) and '3' (a number)"),
        ("'a' < 1", "(a string) and '1' (a number)"),
        ("'tokens: ' + metrics.tokens", "cannot apply '+' to"),
        ("metrics.tokens + 1 - true", "cannot apply '-' to 'metrics.tokens + 1' (a number) and 'true' (a boolean)"),
        ("error_count / zero", "division by zero: 'zero' is 0"),
        ("error_count % 0", "division by zero"),
        ("-urls", "cannot apply unary '-' to 'urls' (an array)"),
        ("urls[input]", "index 'input' must be a string or a whole number, not an object"),
        ("urls[0.5]", "not a number"),
        ("huge / 3", "number too large in 'huge' / '3'"),
    ],
)
def test_evaluation_errors_name_the_path_and_the_types(expression: str, fragment: str) -> None:
    with pytest.raises(ConditionEvaluationError) as caught:
        parse(expression).evaluate(job(reviewer=None, zero=0, huge=10**400))
    assert fragment in str(caught.value)
    assert caught.value.expression == expression


def test_length_of_a_missing_list_is_an_error_naming_the_path() -> None:
    with pytest.raises(ConditionEvaluationError, match=r"'input\.urls' because it is null"):
        holds("input.urls.length > 0", {"input": {}})


def test_all_condition_errors_share_one_base_class() -> None:
    assert issubclass(ConditionSyntaxError, ConditionError)
    assert issubclass(ConditionEvaluationError, ConditionError)


def test_expressions_up_to_the_length_limit_parse() -> None:
    assert parse("x" + " " * 999).evaluate({"x": 1}) == 1


def test_expressions_over_the_length_limit_are_refused() -> None:
    with pytest.raises(ConditionSyntaxError, match="longer than 1000 characters") as caught:
        parse("x" + " " * 1000)
    assert caught.value.position == 1000


@pytest.mark.parametrize(
    ("opening", "closing", "position"), [("(", ")", 50), ("!", "", 50), ("- ", "", 100), ("x[", "]", 101)]
)
def test_nesting_up_to_fifty_levels_parses_and_deeper_is_refused(opening: str, closing: str, position: int) -> None:
    parse(opening * 50 + "0" + closing * 50)
    with pytest.raises(ConditionSyntaxError, match="nested deeper than 50 levels") as caught:
        parse(opening * 51 + "0" + closing * 51)
    assert caught.value.position == position


def test_a_long_flat_chain_evaluates_without_deep_recursion() -> None:
    expression = " + ".join(["1"] * 250)
    assert len(expression) <= 1000
    assert parse(expression).evaluate({}) == 250


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("urls.__class__", None),
        ("input.__class__", None),
        ("input.__dict__", None),
        ("'text'.__len__", None),
        ("input['__class__']", None),
    ],
)
def test_python_attributes_are_never_reached_through_a_condition(expression: str, value: Any) -> None:
    assert parse(expression).evaluate(JOB) is value


def test_python_object_attributes_in_the_context_are_not_readable() -> None:
    class Job:
        secret = "s3cr3t"

    with pytest.raises(ConditionEvaluationError, match="has no property 'secret': it is a Job"):
        parse("job.secret").evaluate({"job": Job()})


def test_python_builtins_are_unknown_names() -> None:
    with pytest.raises(ConditionEvaluationError, match="unknown name '__builtins__'"):
        parse("__builtins__.length").evaluate({})


def test_conditions_are_parsed_and_evaluated_without_python_eval(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("Python evaluation was used")

    for name in ("eval", "exec", "compile"):
        monkeypatch.setattr(builtins, name, refuse)
    condition = Condition("!dryRun || (metrics.tokens < 4000) && urls[0].length > 0")
    assert condition.holds(JOB)


def test_names_are_the_root_names_a_condition_reads() -> None:
    assert parse("scores.length === urls.length").names == {"scores", "urls"}
    assert parse("input.urls[index].length > 0 && true").names == {"input", "index"}
    assert parse("null == undefined").names == frozenset()


def test_parse_reuses_the_condition_for_the_same_text() -> None:
    assert parse("confidence < 0.7") is parse("confidence < 0.7")


def test_a_condition_can_be_built_directly_and_compares_by_source() -> None:
    assert Condition("error_count > 3") == parse("error_count > 3")
    assert Condition("error_count > 3").holds(JOB)
