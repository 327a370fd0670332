"""The generated validators (governance/contracts/codegen.py), held to the reference validator
(governance/contracts/validator.py): the same report, violation for violation, warning for warning
and in the same order, for every contract of seed 000 over many outputs, damaged one way or several;
field names that look like code stay data; `manage.py show_validator_source` prints what the
service runs, and only reads."""

from __future__ import annotations

import ast
import builtins
import math
from collections.abc import Callable, Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import given, settings
from hypothesis import strategies as st

from governance.contracts import codegen
from governance.contracts import services as contracts
from governance.contracts import validator as reference
from governance.contracts.catalog import parse
from governance.contracts.rules import Condition, FieldRule, Kind, Requirement, TypeRule
from governance.contracts.validator import Report, split_path
from governance.kernel.principals import SYSTEM
from tests.governance.contracts.test_properties import (
    JSON,
    KNOWN_IDS,
    NAMES,
    PROPERTY_SETTINGS,
    RULES,
    TEXT,
    Loc,
    Mutation,
    full_output,
    mutations,
    outputs,
)

GENERATED = {name: codegen.compile_contract(rules) for name, rules in RULES.items()}
REFERENCE = {name: reference.compile_contract(rules) for name, rules in RULES.items()}
KNOWN_ID_SETS = [None, KNOWN_IDS, frozenset()]


def _kinds(report: Report) -> list[tuple[type, type]]:
    return [(type(v.path), type(v.code)) for v in report.violations + report.warnings]


def assert_same_report(generated: Callable[..., Report], expected: Callable[..., Report], output: Any) -> None:
    for known_ids in KNOWN_ID_SETS:
        want, got = expected(output, known_ids), generated(output, known_ids)
        assert got == want, output
        assert _kinds(got) == _kinds(want)


# --- Outputs: compliant ones, damaged by the property tests' mutations, then scrambled ---------------

WILD = (
    JSON
    | st.sampled_from([math.nan, -math.inf, "", "  ", "7", "[1, 2]", '{"a": 1}', '[{"a": 1}]', 1.5, True, [], {}])
    | st.builds(object)
)


def _places(value: Any, loc: Loc = ()) -> Iterator[tuple[Loc, Any]]:
    yield loc, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _places(item, (*loc, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _places(item, (*loc, index))


def _apply(change: Mutation, output: Any) -> Any:
    """The change, or the output as it was when an earlier change took its place away."""
    try:
        return change.apply(output)
    except (KeyError, IndexError, TypeError):
        return output


@st.composite
def damaged(draw: Callable, name: str) -> Any:
    """A generated output with 0-4 of the mutations the property tests know (several findings,
    in several fields and list items: where the order of a report matters)."""
    output = draw(outputs(name, min_items=draw(st.integers(0, 2))))
    changes = mutations(name, output)
    for change in draw(st.lists(st.sampled_from(changes), max_size=4)):
        output = _apply(change, output)
    return output


@st.composite
def scrambled(draw: Callable, name: str) -> Any:
    """A damaged output with any value put anywhere: a new key in an object, a value replaced."""
    output = draw(damaged(name))
    for _ in range(draw(st.integers(0, 3))):
        loc, value = draw(st.sampled_from(list(_places(output))))
        if isinstance(value, dict) and draw(st.booleans()):
            loc = (*loc, draw(TEXT))
        output = _apply(Mutation("scramble", loc, draw(WILD)), output)
    return output


@pytest.mark.parametrize("name", NAMES)
@settings(PROPERTY_SETTINGS, max_examples=40)
@given(data=st.data())
def test_the_generated_validator_writes_the_reference_report_for_damaged_outputs(name, data):
    assert_same_report(GENERATED[name], REFERENCE[name], data.draw(damaged(name)))


@pytest.mark.parametrize("name", NAMES)
@settings(PROPERTY_SETTINGS, max_examples=25)
@given(data=st.data())
def test_the_generated_validator_writes_the_reference_report_for_scrambled_outputs(name, data):
    assert_same_report(GENERATED[name], REFERENCE[name], data.draw(scrambled(name)))


@pytest.mark.parametrize("name", NAMES)
def test_every_mutation_and_pair_of_mutations_of_a_full_output_gets_the_reference_report(name):
    output = full_output(name)
    changes = mutations(name, output)
    assert_same_report(GENERATED[name], REFERENCE[name], output)
    for number, first in enumerate(changes):
        once = first.apply(output)
        assert_same_report(GENERATED[name], REFERENCE[name], once)
        assert_same_report(GENERATED[name], REFERENCE[name], _apply(changes[(number * 7 + 3) % len(changes)], once))


def test_findings_are_listed_row_by_row_then_item_by_item():
    """Two fields wrong in two items: the reference lists a row's findings over all items before
    the next row's, and so does the generated code, which walks each item once."""
    output = {"rankings": [{"id": "a", "score": "high"}, {"id": "b", "score": "low"}]}
    report = GENERATED["memory_retrieval_ranking"](output)
    assert [v.path for v in report.violations] == [
        "rankings[0].id",
        "rankings[1].id",
        "rankings[0].score",
        "rankings[1].score",
    ]
    assert report == REFERENCE["memory_retrieval_ranking"](output)


def test_an_unknown_key_is_found_where_a_required_key_is_missing():
    """The generated code counts a required key as found until its absence is seen: an object
    that lacks one and carries an unknown key instead has as many keys as a compliant one."""
    validate = GENERATED["memory_retrieval_ranking"]
    output = {"rankings": [{"score": 0.5, "extra": 1}, {"id": 2, "score": 0.1}], "also": True}
    report = validate(output)
    assert [(v.path, v.code) for v in report.violations] == [("rankings[0].id", "missing_required")]
    assert [(w.path, w.code) for w in report.warnings] == [
        ("also", "unknown_field"),
        ("rankings[0].extra", "unknown_field"),
    ]
    assert report == REFERENCE["memory_retrieval_ranking"](output)


@pytest.mark.parametrize("name", NAMES)
def test_a_report_is_a_value_and_clean_outputs_share_one(name):
    """Both validators give every compliant output without warnings the one shared report, and
    findings come as tuples, so no caller can change a report another caller holds."""
    clean = full_output(name)
    assert GENERATED[name](clean) is reference.COMPLIANT
    assert REFERENCE[name](clean) is reference.COMPLIANT
    damaged = GENERATED[name]("not an object")
    assert not damaged.compliant
    assert type(damaged.violations) is tuple
    assert damaged.warnings == ()
    with pytest.raises(AttributeError):
        damaged.violations.append(damaged.violations[0])  # type: ignore[attr-defined]
    assert reference.Report() == reference.COMPLIANT


def test_a_contract_version_is_compiled_once_and_equal_rules_share_the_function():
    rules = RULES["auto_evolution"]
    assert codegen.compile_contract(rules) is codegen.compile_contract(list(rules))
    assert codegen.compile_contract(rules) is not codegen.compile_contract(RULES["code_evolver"])


# --- Names that look like code ---------------------------------------------------------------------

HOSTILE = [
    "it's",
    'say "hi"',
    "two\nlines",
    "back\\slash",
    "__import__('os').system('touch PWNED')",
    "'); __import__('os').system('touch PWNED'); ('",
    '"""',
    "{curly} {{",
    "# comment",
    "\x00nul\r",
    "' + str(1) + '",
    "é\u202fü",
    "",
]


# The builtins generated code may call: types, and text for messages.
BUILTINS = {
    "type",
    "str",
    "int",
    "float",
    "dict",
    "list",
    "bool",
    "frozenset",
    "format",
    "repr",
    "enumerate",
    "all",
    "len",
}


def _hostile_rules(marker: Path) -> list[FieldRule]:
    """Every place a rule's words reach the generated source: names at each depth, enums,
    documented keys, conditions, alternatives, groups, effects, bounds."""
    touch = f"__import__('os').system('touch {marker}')"
    names = [*HOSTILE, touch]
    effect = f"'''\n{touch}\n'''"
    rules = [
        FieldRule((name,), TypeRule(Kind.STRING, enum=(name, touch)), Requirement.YES, effect=name)
        for name in names[:4]
    ]
    rules += [
        FieldRule((f"{names[4]}.{names[5]}",), TypeRule(Kind.NUMBER, minimum=-math.inf, maximum=1.0), Requirement.YES),
        FieldRule((f"{names[6]}[*].{names[7]}",), TypeRule(Kind.INTEGER), Requirement.IMPLICIT, effect=effect),
        FieldRule((names[8],), TypeRule(Kind.MAPPING, keys=(names[9], touch)), Requirement.NO),
        FieldRule((names[10], names[11]), TypeRule(Kind.STRING, non_empty=True), Requirement.YES),
        FieldRule(
            (names[12],), TypeRule(Kind.ID, existing=True), Requirement.CONDITIONAL, "", Condition(touch, (touch,))
        ),
        FieldRule((touch,), TypeRule(Kind.BOOLEAN), Requirement.NO, group=touch),
        FieldRule((names[0] + "x",), TypeRule(Kind.LIST_OF_MAPPINGS, keys=(touch,)), Requirement.NO, group=touch),
    ]
    return rules


def _filled(rules: list[FieldRule], value: Any) -> dict[str, Any]:
    """An output with ``value`` at every path of the rules (objects and one-item lists on the way)."""
    output: dict[str, Any] = {}
    for rule in rules:
        for path in rule.paths:
            segments = split_path(path)
            target: Any = output
            for segment, following in zip(segments, [*segments[1:], None], strict=True):
                if following is None:
                    if type(target) is dict:
                        target[segment] = value
                    break
                container: Any = [{}] if following == "*" else {}
                if segment == "*":
                    target = target[0] if type(target) is list else {}
                elif type(target) is dict:
                    target = target.setdefault(segment, container)
    return output


def _names_in(source: str) -> tuple[set[str], set[str]]:
    tree = ast.parse(source)
    assert not [node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)]
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    attributes = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    return names, attributes


def test_names_that_look_like_code_stay_data_in_the_generated_source(tmp_path):
    marker = tmp_path / "PWNED"
    rules = _hostile_rules(marker)
    source = codegen.generate(rules)
    names, attributes = _names_in(source)
    assigned = {line.split(" = ")[0] for line in source.splitlines() if " = " in line and not line.startswith(" ")}
    own = {"output", "known_ids", "V", "W", "validate"} | set(codegen.NAMESPACE) | assigned
    used_builtins = {name for name in names if name in vars(builtins)}
    assert used_builtins <= BUILTINS
    walk_variables = names - own - used_builtins
    assert all(name[0] in "vdixkptn" and name[1:].isdigit() for name in walk_variables), walk_variables
    code_members = {member.name for member in reference.Code} | {member.name for member in Kind}
    assert attributes <= {"append", "get", "strip", "is_integer", "issuperset", "items"} | code_members
    strings = {node.value for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Constant)}
    assert any("touch" in str(text) for text in strings)  # the words are there, as string constants

    validate = codegen.compile_contract(rules)
    expected = reference.compile_contract(rules)
    samples: list[Any] = [{}, {name: name for name in HOSTILE}, dict.fromkeys(HOSTILE, 3)]
    samples += [_filled(rules, value) for value in ("x", 3, 0.5, 1.5, None, True, [], [{}], {}, math.nan)]
    for output in samples:
        assert_same_report(validate, expected, output)
    assert not validate({}).compliant  # the code ran, and found the required fields missing
    assert not marker.exists()


# --- The service and the command -------------------------------------------------------------------


@pytest.mark.django_db
def test_the_service_validates_with_the_generated_code(catalog):
    contract = contracts.current("retrieval_answer")
    assert contracts.validator(contract.pk) is codegen.compile_contract(contracts.rules(contract.pk))
    assert contracts.validator(contract.pk).__code__.co_filename == "<contract validator>"


def _show(*args: str) -> str:
    out = StringIO()
    call_command("show_validator_source", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_the_command_prints_the_source_the_service_runs_and_only_reads(catalog):
    contract = contracts.current("retrieval_answer")
    with CaptureQueriesContext(connection) as queries:
        printed = _show("retrieval_answer")
    assert all(query["sql"].lstrip().upper().startswith("SELECT") for query in queries.captured_queries)
    header, _, source = printed.partition("\n")
    assert header == "# contract 'retrieval_answer', version 1"
    assert source == codegen.generate(contracts.rules(contract.pk))
    assert "def validate(output, known_ids=None):" in source
    compile(source, "<printed>", "exec")


@pytest.mark.django_db
def test_the_command_prints_an_older_version_on_request(catalog):
    doc = next(d for d in parse(contracts.CATALOG.read_text(encoding="utf-8")) if d.name == "retrieval_answer")
    doc.rows[0] = doc.rows[0].__class__("`status`", "`str` (`ok/refused/error/partial`)", "Oui", "", 0)
    contracts.save_contract(doc, actor=SYSTEM)
    assert "'partial'" in _show("retrieval_answer")
    old = _show("retrieval_answer", "--version", "1")
    assert old.startswith("# contract 'retrieval_answer', version 1")
    assert "'refused'" in old
    assert "'partial'" not in old


@pytest.mark.django_db
def test_the_command_names_a_contract_or_version_the_catalog_lacks(catalog):
    with pytest.raises(CommandError, match="No contract named 'nope'"):
        _show("nope")
    with pytest.raises(CommandError, match="in version 9"):
        _show("retrieval_answer", "--version", "9")
