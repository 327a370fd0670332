"""R3 artifacts rendered from a job's record: audit.md, backlog.json, graph.json. Pure.

The record is a plain dict (built by agents.artifacts from the database), so these functions
are easy to test and to reuse for previews.
"""

from __future__ import annotations

import itertools
import json
from typing import Any


def _condition_lines(results: list[dict[str, Any]]) -> list[str]:
    if not results:
        return ["_none declared_"]
    lines = []
    for r in results:
        mark = "pass" if r["passed"] else f"**FAIL** `{r['error_code']}`"
        note = f" ({r['error']})" if r.get("error") else ""
        lines.append(f"- `{r['expression']}`: {mark}{note}")
    return lines


def audit_markdown(record: dict[str, Any]) -> str:
    """What ran, with which contract, what held, what was measured, what was escalated."""
    output = record.get("output") or {}
    lines = [
        f"# Audit: {record['agent_id']} job {record['job_id']}",
        "",
        f"- Intent: `{record['intent']}`",
        f"- Manifest version: {record['manifest_version']}",
        f"- Status: **{record['status']}** after {record['attempts']} attempt(s)",
        f"- Trace: {record['trace_id']}",
        f"- Created: {record['created_at']}; finished: {record['finished_at']}",
        f"- Scope: `{json.dumps(record['scope'], sort_keys=True)}`",
        "",
        "## Pre-conditions",
        *_condition_lines(record["pre_conditions"]),
        "",
        "## Post-conditions",
        *_condition_lines(record["post_conditions"]),
        "",
        "## Metrics",
    ]
    metrics = output.get("metrics") or {}
    lines += [f"- {name}: {value}" for name, value in sorted(metrics.items())] or ["_none reported_"]
    lines += ["", "## Path", " → ".join(record["visited_nodes"]) or "_no node reported_", "", "## Errors"]
    lines += [
        f"- {e['timestamp']} `{e['node']}`: {e['message']} ({'recoverable' if e['recoverable'] else 'fatal'})"
        for e in record["errors"]
    ] or ["_none_"]
    lines += ["", "## Escalations"]
    lines += [
        f"- #{e['id']} {e['status']}: {e['reason']}"
        + (f" → {e['targetAgent']}" if e["targetAgent"] else "")
        + (" → reviewer inbox" if e["reviewItemId"] else "")
        for e in record["escalations"]
    ] or ["_none_"]
    return "\n".join(lines) + "\n"


def backlog(record: dict[str, Any]) -> dict[str, Any]:
    """Actions that remain after the job: failed post-conditions to fix, open escalations to
    follow, unrecovered errors, and whatever the agent itself said comes next."""
    items: list[dict[str, Any]] = [
        {"action": "fix", "reason": r["error_code"], "detail": r["expression"], "source": "post_condition"}
        for r in record["post_conditions"]
        if not r["passed"]
    ]
    items += [
        {"action": "await_escalation", "reason": e["reason"], "detail": e["status"], "source": f"escalation:{e['id']}"}
        for e in record["escalations"]
        if e["status"] in ("open", "reescalated")
    ]
    items += [
        {"action": "investigate", "reason": e["message"], "detail": e["node"], "source": "error"}
        for e in record["errors"]
        if not e["recoverable"]
    ]
    next_action = (record.get("output") or {}).get("nextAction")
    if next_action == "continue":
        items.append({"action": "continue", "reason": "the agent asked to continue", "detail": "", "source": "agent"})
    return {"agent_id": record["agent_id"], "job_id": record["job_id"], "items": items}


def graph(record: dict[str, Any]) -> dict[str, Any]:
    """The GraphState path as nodes and edges, with the jobs it came from and led to."""
    visited = record["visited_nodes"]
    nodes = list(dict.fromkeys(visited))
    edges = [[a, b] for a, b in itertools.pairwise(visited)]
    return {
        "job_id": record["job_id"],
        "current_node": record["current_node"],
        "nodes": nodes,
        "edges": edges,
        "errors": [{"node": e["node"], "message": e["message"]} for e in record["errors"]],
        "parent_job_id": record["parent_job_id"],
        "child_job_ids": record["child_job_ids"],
        "budget": record["budget"],
    }
