"""Which actions need a reviewer: app > domain > tool > session > AI request, OR semantics."""

from __future__ import annotations

import pytest

from sessions.validation import Policy, ToolPolicy, refusal, resolve, ungranted

TOOLS = {
    "sql": ToolPolicy("read", requires_approval=False),
    "snapshot": ToolPolicy("execute", requires_approval=True),
    "upsert": ToolPolicy("write", requires_approval=False),
}
READ = [{"type": "sql", "params": {"query": "select 1"}}]


def decide(actions=READ, *, automation=False, domain="seo", session=False, ai=False, **policy):
    return resolve(
        actions=actions,
        automation=automation,
        domain=domain,
        session_requires=session,
        ai_requests=ai,
        policy=Policy(tools=TOOLS, **policy),
    )


def test_a_read_tool_needs_nobody():
    decision = decide()
    assert decision.required is False
    assert decision.context["actions"] == ["Run sql (read) with query='select 1'"]


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"app": True}, "platform requires approval"),
        ({"domains": frozenset({"seo"})}, "seo domain"),
        ({"actions": [{"type": "snapshot", "params": {}}]}, "manifest requires approval for snapshot"),
        ({"session": True}, "session requires"),
        ({"ai": True}, "AI asked"),
    ],
)
def test_any_level_is_enough(kwargs, reason):
    decision = decide(**kwargs)
    assert decision.required is True
    assert any(reason in r for r in decision.context["reasons"])


def test_reasons_come_in_hierarchy_order():
    decision = decide([{"type": "snapshot", "params": {}}], app=True, domains=frozenset({"seo"}), session=True, ai=True)
    kinds = [r.split(" ")[1] for r in decision.context["reasons"]]
    assert kinds == ["platform", "seo", "manifest", "session", "AI"]


def test_in_automation_only_the_manifest_tools_count():
    assert decide(automation=True, app=True, domains=frozenset({"seo"}), session=True, ai=True).required is False
    assert decide([{"type": "snapshot", "params": {}}], automation=True).required is True


def test_write_tools_come_with_a_warning_even_without_approval():
    decision = decide([{"type": "upsert", "params": {"rows": 3}}])
    assert decision.required is False
    assert decision.context["warnings"] == ["upsert has write permission: it changes things"]


def test_long_parameters_are_shortened_in_plain_words():
    decision = decide([{"type": "sql", "params": {"query": "x" * 500}}])
    assert decision.context["actions"][0].endswith("…")
    assert len(decision.context["actions"][0]) < 120


def test_the_tools_the_manifest_does_not_grant_are_named_once_in_order():
    actions = [
        {"type": "rm_rf", "params": {}},
        {"type": "sql", "params": {"query": "select 1"}},
        {"type": "run", "params": {"tool_id": "shell"}},
        {"type": "rm_rf", "params": {"path": "/"}},
    ]

    assert ungranted(actions, TOOLS) == ["rm_rf", "shell"]
    assert ungranted(READ, TOOLS) == []


def test_a_tool_id_parameter_names_the_tool_the_action_runs():
    assert ungranted([{"type": "sql", "params": {"tool_id": "shell"}}], TOOLS) == ["shell"]
    assert ungranted([{"type": "anything", "params": {"tool_id": "sql"}}], TOOLS) == []


def test_the_refusal_names_every_ungranted_tool_and_says_nothing_ran():
    assert refusal(["rm_rf"]).startswith("Actions refused: rm_rf is not granted by the agent's manifest.")
    assert "rm_rf, shell are not granted" in refusal(["rm_rf", "shell"])
    assert "Nothing of this answer was run" in refusal(["rm_rf"])
