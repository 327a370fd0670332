"""Generate and store a finished job's R3 artifacts.

audit.md also says what the manifest promised and how the result kept it: the invariants that
were in force (seed 001's `validation.invariants`, which no expression can check, so a reviewer
reads them next to the run), and every output check with the path of each violation.
"""

from __future__ import annotations

import json
from typing import Any

from agents import reports
from agents.escalations import describe
from agents.models import Job, JobArtifact


def job_record(job: Job) -> dict[str, Any]:
    return {
        "agent_id": job.agent.agent_id,
        "job_id": str(job.job_id),
        "trace_id": str(job.trace_id),
        "parent_job_id": str(job.parent_id) if job.parent_id else None,
        "child_job_ids": [str(pk) for pk in job.children.values_list("pk", flat=True)],
        "manifest_version": job.manifest.version,
        "intent": job.intent,
        "status": job.status,
        "attempts": job.attempts,
        "scope": job.scope,
        "created_at": job.created_at.isoformat(),
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
        "pre_conditions": job.pre_conditions,
        "post_conditions": job.post_conditions,
        "output": job.output,
        "current_node": job.current_node,
        "visited_nodes": job.visited_nodes,
        "errors": job.errors,
        "budget": job.budget,
        "escalations": [describe(e) for e in job.escalations.select_related("target_agent")],
        "invariants": list(job.manifest.document.get("validation", {}).get("invariants", [])),
        "context": job.context,
    }


def _request_lines(context: dict[str, Any]) -> list[str]:
    """Who asked for the work and in what role (seed 001 JobContext): a reviewer reading the audit
    needs the requester (``userId``) and the page's SEO role as much as the source."""
    facts = [
        ("Source", context.get("source")),
        ("Priority", context.get("priority")),
        ("Requested by (userId)", context.get("userId")),
        ("SEO role (seoRole)", context.get("seoRole")),
        ("RAG version (ragVersion)", context.get("ragVersion")),
    ]
    return ["", "## Request", *(f"- {label}: {value}" for label, value in facts if value)]


def _artifact_lines(output: dict[str, Any] | None) -> list[str]:
    """The artifacts the agent reported in its AgentOutput (seed 001 ``artifacts``), kept as given."""
    reported = (output or {}).get("artifacts") or []
    lines = ["", "## Artifacts reported by the agent"]
    for artifact in reported:
        where = artifact.get("uri") or "inline"
        kind = f" ({artifact['type']})" if artifact.get("type") else ""
        lines.append(f"- {artifact.get('name')}{kind}: {where}")
    return lines if reported else [*lines, "_none_"]


def manifest_sections(record: dict[str, Any]) -> str:
    """The audit.md sections on the request, the manifest's promises (invariants and output
    checks) and the artifacts the agent reported."""
    lines = _request_lines(record.get("context") or {})
    lines += ["", "## Invariants"]
    lines += [f"- {invariant}" for invariant in record["invariants"]] or ["_none declared_"]
    lines += ["", "## Output checks"]
    checks = [r for r in record["post_conditions"] if r.get("check") == "output"]
    for result in checks:
        mark = "pass" if result["passed"] else f"**FAIL** `{result['error_code']}`"
        lines.append(f"- `{result['expression']}`: {mark}")
        if result.get("unchecked"):
            lines.append(f"  - unchecked (schemas not defined): {', '.join(result['unchecked'])}")
        lines += [
            f"  - `{'.'.join(str(part) for part in v['loc'])}`: {v['msg']} ({v['type']})" for v in result["violations"]
        ]
    if not checks:
        output = record.get("output")
        if output is None:
            lines.append("_no result_")
        elif not output.get("success"):
            lines.append("_not checked: the result did not report success_")
        else:
            lines.append("_no outputs declared_")
    lines += _artifact_lines(record.get("output"))
    return "\n".join(lines) + "\n"


def generate(job: Job) -> list[JobArtifact]:
    """`{agent_id}.{timestamp}.audit.md`, `.backlog.json`, `.graph.json` (seed R3)."""
    record = job_record(job)
    stem = f"{job.agent.agent_id}.{job.finished_at:%Y%m%dT%H%M%SZ}"
    rendered = {
        JobArtifact.Kind.AUDIT: (
            f"{stem}.audit.md",
            "text/markdown",
            reports.audit_markdown(record) + manifest_sections(record),
        ),
        JobArtifact.Kind.BACKLOG: (f"{stem}.backlog.json", "application/json", _json(reports.backlog(record))),
        JobArtifact.Kind.GRAPH: (f"{stem}.graph.json", "application/json", _json(reports.graph(record))),
    }
    return [
        JobArtifact.objects.update_or_create(
            job=job, kind=kind, defaults={"name": name, "content_type": content_type, "content": content}
        )[0]
        for kind, (name, content_type, content) in rendered.items()
    ]


def _json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
