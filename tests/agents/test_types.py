"""The type language of manifest inputs and outputs (seed 001's Zod subset): every construct,
values that fit and values that do not, and expressions that do not parse."""

from __future__ import annotations

import pytest

from agents import types as t


def problems(expression: str, value: object, **schemas: str | dict) -> list[tuple[tuple, str]]:
    named = t.compile_schemas({name: t.parse_definition(text) for name, text in schemas.items()})
    return [(v.loc, v.type) for v in t.check(t.parse(expression), value, schemas=named)]


@pytest.mark.parametrize(
    ("expression", "good", "bad", "code"),
    [
        ("z.string()", "text", 3, "type"),
        ("z.number()", 2.5, "2.5", "type"),
        ("z.number()", 0, True, "type"),  # a boolean is not a number, although Python says so
        ("z.boolean()", False, 0, "type"),
        ("z.string().min(2)", "ab", "a", "too_small"),
        ("z.string().max(2)", "ab", "abc", "too_big"),
        ("z.string().length(2)", "ab", "abc", "too_big"),
        ("z.string().nonempty()", "a", "", "too_small"),
        ("z.number().min(1)", 1, 0.5, "too_small"),
        ("z.number().max(10)", 10, 10.5, "too_big"),
        ("z.number().int()", 3, 3.5, "integer"),
        ("z.number().int()", 3.0, float("inf"), "type"),
        ("z.string().url()", "https://example.com/a?b=1", "example.com/a", "url"),
        ("z.string().url()", "http://x.test", "https://", "url"),
        ("z.string().url()", "http://x.test/a", "http://x.test/a b", "url"),
        ("z.string().email()", "a@b.fr", "a@b", "email"),
        ("z.string().uuid()", "3f1c4a52-6a1e-4b61-9d0e-0f2b1f7d9a11", "3f1c4a52", "uuid"),
        ("z.string().datetime()", "2026-01-27T10:00:00Z", "2026-01-27", "datetime"),
        ("z.string().datetime()", "2026-01-27T10:00:00+01:00", "2026-01-27T10:00:00", "datetime"),
        ("z.enum(['low', 'high'])", "low", "medium", "enum"),
        ('z.enum(["low"])', "low", 1, "type"),
        ("z.array(z.number())", [1, 2], {"0": 1}, "type"),
        ("z.array(z.number()).min(1)", [1], [], "too_small"),
        ("z.array(z.number()).max(1)", [1], [1, 2], "too_big"),
        ("z.array(z.number()).nonempty()", [1], [], "too_small"),
        ("z.record(z.number())", {"a": 1}, [1], "type"),
        ("z.record(z.string(), z.number())", {"a": 1}, {"a": "1"}, "type"),
        ("z.object({a: z.number()})", {"a": 1, "extra": "kept"}, {}, "missing"),
        ("z.object({a: z.number()})", {"a": 1}, "a", "type"),
        ("z.unknown()", None, None, None),
        ("z.any()", {"x": [1]}, None, None),
        ("z.string().nullable()", None, 1, "type"),
    ],
)
def test_each_construct_accepts_what_fits_and_refuses_what_does_not(expression, good, bad, code):
    assert problems(expression, good) == []
    if code is not None:
        assert [found for _, found in problems(expression, bad)] == [code]


def test_null_needs_nullable_even_for_an_optional_field():
    kind = "z.object({a: z.string().optional(), b: z.string().nullable().optional()})"
    assert problems(kind, {}) == []
    assert problems(kind, {"b": None}) == []
    assert problems(kind, {"a": None}) == [(("a",), "type")]


def test_a_default_makes_a_field_optional():
    assert problems("z.object({limit: z.number().max(10000).default(1000)})", {}) == []
    assert problems("z.object({flag: z.boolean().default(false), tags: z.array(z.string()).default([])})", {}) == []


def test_describe_is_documentation_only():
    assert problems('z.string().describe("the page URL").url()', "https://a.test") == []


def test_violations_carry_the_path_inside_the_value():
    kind = "z.object({pages: z.array(z.object({url: z.string().url(), depth: z.number().int()}))})"
    value = {"pages": [{"url": "https://a.test", "depth": 1}, {"url": "nope", "depth": 1.5}, {}]}

    assert problems(kind, value) == [
        (("pages", 1, "url"), "url"),
        (("pages", 1, "depth"), "integer"),
        (("pages", 2, "url"), "missing"),
        (("pages", 2, "depth"), "missing"),
    ]


def test_messages_say_what_was_expected_and_what_came():
    (violation,) = t.check(t.parse("z.array(z.string().url())"), ["https://a.test", 7])
    assert violation.msg == "expected url string, got number"
    assert violation.as_dict(("body", "payload", "urls")) == {
        "loc": ["body", "payload", "urls", 1],
        "msg": "expected url string, got number",
        "type": "type",
    }


def test_violations_are_capped():
    found = t.check(t.parse("z.array(z.number())"), ["x"] * 10_000)
    assert len(found) == t.MAX_VIOLATIONS


def test_named_schemas_are_checked_through_their_definition():
    options = {"depth": "z.number().int().min(1)", "mode": "z.enum(['fast', 'full']).optional()"}

    assert problems("Options", {"depth": 2}, Options=options) == []
    assert problems("Options", {"depth": 0, "mode": "slow"}, Options=options) == [
        (("depth",), "too_small"),
        (("mode",), "enum"),
    ]
    assert problems("z.array(Score)", [{"level": "V9"}], Score="z.object({level: z.enum(['V1', 'V2'])})") == [
        ((0, "level"), "enum")
    ]


def test_a_schema_may_use_another():
    schemas = {"Url": "z.string().url()", "Page": {"url": "Url", "tags": "z.array(z.string()).optional()"}}
    assert problems("z.array(Page)", [{"url": "https://a.test"}], **schemas) == []
    assert problems("z.array(Page)", [{"url": "a"}], **schemas) == [((0, "url"), "url")]


def test_a_name_resolving_nowhere_is_left_unchecked_and_reported():
    """Only a version stored before names had to resolve can reach one (agents/named_schemas.py)."""
    kind = t.parse("z.array(VLevelScoreSchema)")
    assert t.check(kind, [1, "two", None]) == []
    assert t.check(kind, "not an array")  # what is declared around it is still checked
    assert t.Schemas().unresolved(kind) == ["VLevelScoreSchema"]
    assert t.check(t.parse("VLevelOptionsSchema"), None) == []


def test_an_optional_schema_reference_may_be_absent():
    named = t.compile_schemas({"Opt": t.parse("z.string().optional()")})
    kind = t.parse("z.object({a: Opt, b: Missing.optional()})")
    assert t.check(kind, {}, schemas=named) == []
    assert [v.loc for v in t.check(t.parse("z.object({a: Opt, b: Missing})"), {}, schemas=named)] == [("b",)]


def test_named_fields_check_required_and_leave_undeclared_names_alone():
    declared = [("urls", t.parse("z.array(z.string())"), True), ("options", t.parse("Options"), False)]

    assert t.check_fields(declared, {"urls": [], "depth": 2}) == []
    assert [(v.loc, v.msg) for v in t.check_fields(declared, {}, what="input")] == [
        (("urls",), "required input 'urls' is missing")
    ]
    assert [v.type for v in t.check_fields(declared, [])] == ["type"]


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("", "empty type expression"),
        ("string", None),  # a schema name: parses (it must resolve when the manifest is loaded)
        ("z.string", "expected '('"),
        ("z.strin()", "z.strin() is not supported"),
        ("z.string(", "expected ')'"),
        ("z.string())", "unexpected ')' after the type"),
        ("z.array()", "expected a type"),
        ("z.string().url(1)", "expected ')'"),
        ("z.number().url()", ".url() applies to z.string()"),
        ("z.string().int()", ".int() applies to z.number()"),
        ("z.boolean().min(1)", ".min() applies to z.string() or z.number() or z.array()"),
        ("z.number().length(2)", ".length() applies to z.string() or z.array()"),
        ("Schema.min(1)", ".min() applies to"),
        ("z.string().min(-1)", "a length bound is a whole number"),
        ("z.array(z.string()).max(1.5)", "a length bound is a whole number"),
        ("z.string().min(3).max(2)", "the minimum 3 is above the maximum 2"),
        ("z.string().url().email()", ".email() conflicts with .url()"),
        ("z.string().shout()", ".shout() is not supported"),
        ("z.enum([])", "needs at least one value"),
        ("z.enum([1, 2])", "takes strings"),
        ("z.object({a: z.string(), a: z.number()})", "field 'a' is declared twice"),
        ("z.object({a z.string()})", "expected ':'"),
        ("z.object({1: z.string()})", "expected a field name"),
        ("z.record(z.number(), z.string())", "a record's keys can only be z.string()"),
        ("z.string().default(foo)", "a default is"),
        ("z.string() ; drop table", "unexpected character ';'"),
        ("__import__('os')", "unexpected '(' after the type"),
        ("z.string().min(1e999)", "not a finite number"),
        ("$ref", "is not a schema name"),
    ],
)
def test_expressions_outside_the_language_do_not_parse(expression, reason):
    if reason is None:
        assert t.parse(expression).kind == "ref"
        return
    with pytest.raises(t.TypeSyntaxError) as caught:
        t.parse(expression)
    assert reason in str(caught.value)


def test_nesting_is_bounded():
    deep = "z.array(" * t.MAX_DEPTH + "z.string()" + ")" * t.MAX_DEPTH
    shallow = "z.array(" * (t.MAX_DEPTH - 1) + "z.string()" + ")" * (t.MAX_DEPTH - 1)
    assert t.parse(shallow).kind == "array"
    with pytest.raises(t.TypeSyntaxError, match="nested deeper"):
        t.parse(deep)
    with pytest.raises(t.TypeSyntaxError, match="nested deeper"):
        t.parse("z.array(" * 240)  # refused long before Python's own recursion limit
    with pytest.raises(t.TypeSyntaxError, match="longer than"):
        t.parse("z.array(" * 10_000)  # and never even tokenized


def test_length_is_bounded():
    with pytest.raises(t.TypeSyntaxError, match="longer than"):
        t.parse("z.string()" + " " * t.MAX_EXPRESSION_LENGTH)


def test_schema_cycles_are_refused_with_the_schema_named():
    with pytest.raises(t.SchemaError) as caught:
        t.compile_schemas({"A": t.parse("z.array(B)"), "B": t.parse("z.object({a: A})")})
    assert caught.value.loc == ("schemas", "A")
    assert "A -> B -> A" in str(caught.value)
    with pytest.raises(t.SchemaError, match="refers to itself"):
        t.compile_schemas({"Tree": t.parse("z.object({children: z.array(Tree)})")})


def test_resolved_depth_is_bounded_across_schemas():
    level = "z.array(" * 9 + "{}" + ")" * 9
    chain = {f"S{n}": t.parse(level.format(f"S{n + 1}" if n < 3 else "z.string()")) for n in range(4)}
    with pytest.raises(t.SchemaError, match="nested 37 levels deep"):
        t.compile_schemas(chain)
    fine = t.compile_schemas({k: v for k, v in chain.items() if k in ("S2", "S3")})
    assert fine.depths == {"S3": 10, "S2": 19}


def test_a_stored_document_resolves_its_names_in_its_own_schemas_first_then_its_registry_snapshot():
    document = {
        "schemas": {"Level": "z.enum(['V1', 'V2'])"},
        "inputs": [{"name": "scores", "type": "z.array(Score)", "required": True}],
        "outputs": [],
    }
    snapshot = {"Score": {"url": "z.string().url()", "level": "Level"}, "Level": "z.number()"}

    declared = t.from_document(document, snapshot)

    assert declared.inputs[0].unchecked == ()
    problems = declared.check_inputs({"scores": [{"url": "nope", "level": "V9"}]})
    assert [(v.loc, v.type) for v in problems] == [(("scores", 0, "url"), "url"), (("scores", 0, "level"), "enum")]


def test_a_stored_document_is_read_leniently():
    """Rows stored before types were checked may hold expressions that do not parse: left
    unchecked, never a failure of every job of that version."""
    document = {
        "schemas": {"Bad": "z.(("},
        "inputs": [{"name": "urls", "type": "array of urls", "required": True}],
        "outputs": [{"name": "answer", "type": None, "contract": "retrieval_answer"}],
    }
    declared = t.from_document(document)
    assert declared.check_inputs({"urls": 3}) == []
    assert [v.type for v in declared.check_inputs({})] == ["missing"]
    assert declared.outputs[0].contract == "retrieval_answer"
    assert declared.outputs[0].required
