"""The manifest schema (pydantic in Zod's role): what loads, what is refused, and why."""

from __future__ import annotations

import copy

import pydantic
import pytest
import yaml

from agents.manifest import KpiDirection, Manifest, kpi_direction, read_text, version_key
from tests.support.manifests import manifest_text


@pytest.fixture
def seed() -> dict:
    return read_text(manifest_text("agent.seo.vlevel"))


def errors_of(document: dict) -> list[tuple]:
    with pytest.raises(pydantic.ValidationError) as caught:
        Manifest.model_validate(document)
    return [tuple(err["loc"]) for err in caught.value.errors()]


def test_the_seed_example_loads_unchanged(seed):
    manifest = Manifest.model_validate(seed)

    assert manifest.id == "agent.seo.vlevel"
    assert manifest.role == "executor"
    assert manifest.domain == "seo"
    assert manifest.memory.long_term.storage == "supabase"
    assert manifest.memory.shared.namespaces == ["seo:scores", "seo:audit"]
    assert manifest.validation.pre_conditions[0].error_code == "INVALID_URL_COUNT"
    assert manifest.escalation.target_agent == "agent.seo.architect"
    assert [k.direction for k in manifest.kpis] == [KpiDirection.HIGHER_IS_BETTER, KpiDirection.LOWER_IS_BETTER]


def test_the_agent_root_is_optional(seed):
    wrapped = read_text(yaml.safe_dump({"Agent": seed}))
    assert Manifest.model_validate(wrapped) == Manifest.model_validate(seed)


def test_enums_are_stored_lower_case(seed):
    document = Manifest.model_validate(seed).document()
    assert document["role"] == "executor"
    assert {t["permissions"] for t in document["tools"]} == {"read", "execute"}


def test_write_and_execute_tools_require_approval_by_default(seed):
    tools = {t.tool_id: t for t in Manifest.model_validate(seed).tools}
    assert tools["mcp__supabase__execute_sql"].requires_approval is False
    assert tools["mcp__chrome-devtools__take_snapshot"].requires_approval is True


def test_a_tool_may_waive_approval_explicitly(seed):
    seed["tools"][1]["requires_approval"] = False
    assert Manifest.model_validate(seed).tools[1].requires_approval is False


def test_permission_is_accepted_for_permissions(seed):
    seed["tools"][0] = {"tool_id": "t", "permission": "WRITE", "rate_limit": 5}
    assert Manifest.model_validate(seed).tools[0].permissions == "write"


@pytest.mark.parametrize(
    ("path", "value", "loc"),
    [
        (("role",), "the boss", ("role",)),
        (("domain",), "fin@nce", ("domain",)),
        (("version",), "1.0", ("version",)),
        (("id",), "Agent-SEO", ("id",)),
        (("tools", 0, "permissions"), "admin", ("tools", 0, "permissions")),
        (("tools", 0, "rate_limit"), 0, ("tools", 0, "rate_limit")),
        (("memory", "long_term", "storage"), "s3", ("memory", "long_term", "storage")),
        (("memory", "long_term", "storage"), "redis", ("memory", "long_term", "storage")),  # not served here
        (
            ("validation", "pre_conditions", 0, "error_code"),
            "lower case",
            ("validation", "pre_conditions", 0, "error_code"),
        ),
    ],
)
def test_invalid_values_are_refused_with_their_path(seed, path, value, loc):
    target = seed
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert loc in errors_of(seed)


def test_an_unknown_field_is_refused_so_typos_do_not_drop_limits(seed):
    seed["tools"][0]["rate_limt"] = 5
    assert ("tools", 0, "rate_limt") in errors_of(seed)


@pytest.mark.parametrize(
    "expression",
    ["urls.length >", "urls.length = 3", "__import__('os').system('id')", "scores.map(x => x)"],
)
def test_a_condition_that_does_not_parse_is_refused_at_load(seed, expression):
    seed["validation"]["post_conditions"][0]["expression"] = expression
    assert ("validation", "post_conditions", 0, "expression") in errors_of(seed)


def test_an_escalation_trigger_that_does_not_parse_is_refused(seed):
    seed["escalation"]["triggers"].append("confidence <")
    assert ("escalation", "triggers", 2) in errors_of(seed)


def test_incoherent_kpi_thresholds_are_refused(seed):
    seed["kpis"][0]["threshold_warning"] = 0.99  # target 0.95 < warning 0.99 > critical 0.70
    assert ("kpis", 0) in errors_of(seed)


def test_equal_thresholds_cannot_be_rated(seed):
    seed["kpis"][1]["threshold_critical"] = seed["kpis"][1]["threshold_warning"]
    assert ("kpis", 1) in errors_of(seed)


@pytest.mark.parametrize("section", ["tools", "kpis", "inputs"])
def test_duplicates_are_refused(seed, section):
    seed[section].append(copy.deepcopy(seed[section][0]))
    assert errors_of(seed) == [()]


def test_triggers_need_somewhere_to_escalate(seed):
    seed["escalation"]["target_agent"] = None
    assert ("escalation",) in errors_of(seed)


@pytest.mark.parametrize(
    ("target", "warning", "critical", "direction"),
    [(0.95, 0.85, 0.7, "higher_is_better"), (5000, 10000, 30000, "lower_is_better")],
)
def test_kpi_direction_is_inferred_from_the_thresholds(target, warning, critical, direction):
    assert kpi_direction(target, warning, critical) == direction


def test_semver_precedence():
    ordered = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0",
        "1.0.1",
        "1.10.0",
    ]
    assert sorted(ordered, key=version_key) == ordered
    assert version_key("1.0.0+build.5") == version_key("1.0.0")
