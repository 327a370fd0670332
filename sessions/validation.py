"""Which AI actions need a human's approval first (seed 003's ValidationResolver). Pure.

Levels app > domain > tool > session > AI request, with OR semantics: one level asking is enough.
Governance extension: a manifest tool that requires approval needs it in AUTOMATION too, where
the seed ignores validation; the AI's own `validationRequest` stays ignored in AUTOMATION.
An action on a tool the manifest does not grant is not a reviewer's call: `ungranted` finds it and
the processor refuses the whole answer before any review (issue 34), so `resolve` only ever judges
granted tools.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

MAX_PARAM_CHARS = 80


@dataclass(frozen=True)
class ToolPolicy:
    permission: str
    requires_approval: bool


@dataclass(frozen=True)
class Policy:
    app: bool = False
    domains: frozenset[str] = frozenset()
    tools: Mapping[str, ToolPolicy] = field(default_factory=dict)


@dataclass(frozen=True)
class Decision:
    required: bool
    context: dict[str, Any]


def _tool_id(action: dict[str, Any]) -> str:
    return str(action.get("params", {}).get("tool_id") or action["type"])


def ungranted(actions: list[dict[str, Any]], tools: Mapping[str, ToolPolicy]) -> list[str]:
    """The tools the actions name that the manifest does not grant, each once, in order. A
    reviewer's approval cannot grant a tool (only a manifest can), so such an answer never
    reaches review: it goes back to the model like a format error."""
    return list(dict.fromkeys(tool_id for action in actions if (tool_id := _tool_id(action)) not in tools))


def refusal(tool_ids: list[str]) -> str:
    """The FORMAT_ERROR the model reads: which tools, and that nothing of the answer was run."""
    names = ", ".join(tool_ids)
    return (
        f"Actions refused: {names} {'is' if len(tool_ids) == 1 else 'are'} not granted by the agent's manifest. "
        "Nothing of this answer was run. Answer again with actionCommands on the manifest's tools only."
    )


def describe(action: dict[str, Any], tools: Mapping[str, ToolPolicy]) -> str:
    """A granted action in plain words, e.g. `Run mcp__github__create_issue (write) with title="Fix"`."""
    tool_id = _tool_id(action)
    params = ", ".join(
        f"{key}={_short(value)}" for key, value in sorted(action.get("params", {}).items()) if key != "tool_id"
    )
    return f"Run {tool_id} ({tools[tool_id].permission})" + (f" with {params}" if params else "")


def _short(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= MAX_PARAM_CHARS else text[: MAX_PARAM_CHARS - 1] + "…"


def resolve(
    *,
    actions: list[dict[str, Any]],
    automation: bool,
    domain: str,
    session_requires: bool,
    ai_requests: bool,
    policy: Policy,
) -> Decision:
    """Whether a reviewer must approve the actions first, with the reasons and warnings the review
    item shows. Every action's tool is granted by ``policy.tools`` (see ``ungranted``)."""
    reasons: list[str] = []
    warnings: list[str] = []
    if not automation:
        if policy.app:
            reasons.append("the platform requires approval for every action")
        if domain in policy.domains:
            reasons.append(f"the {domain} domain requires approval for actions")
    for action in actions:
        tool_id = _tool_id(action)
        tool = policy.tools[tool_id]
        if tool.requires_approval:
            reasons.append(f"the manifest requires approval for {tool_id}")
        if tool.permission != "read":
            warnings.append(f"{tool_id} has {tool.permission} permission: it changes things")
    if not automation:
        if session_requires:
            reasons.append("this session requires approval for actions")
        if ai_requests:
            reasons.append("the AI asked for approval")
    context = {
        "actions": [describe(action, policy.tools) for action in actions],
        "reasons": reasons,
        "warnings": list(dict.fromkeys(warnings)),
    }
    return Decision(required=bool(reasons), context=context)
