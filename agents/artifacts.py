"""Generate and store a finished job's R3 artifacts."""

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
    }


def generate(job: Job) -> list[JobArtifact]:
    """`{agent_id}.{timestamp}.audit.md`, `.backlog.json`, `.graph.json` (seed R3)."""
    record = job_record(job)
    stem = f"{job.agent.agent_id}.{job.finished_at:%Y%m%dT%H%M%SZ}"
    rendered = {
        JobArtifact.Kind.AUDIT: (f"{stem}.audit.md", "text/markdown", reports.audit_markdown(record)),
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
