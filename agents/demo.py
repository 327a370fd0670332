"""Demo fleet: the seed manifests, a few jobs run through the real services, KPI history, a cron
job trigger, and the KPI that history makes critical in the reviewer inbox.

Everything goes through the services an agent would call (registry, submit_job, claim_lease,
update_state, submit_result), so the demo shows what the platform really does with a result:
post-conditions, escalation routing, KPI samples, R3 artifacts. Only the KPI history of the
last 14 days is written directly, since it stands for jobs that ran before the demo existed.

Safe to run again: manifests already active are a no-op, jobs and history are created only when
the demo agents have none. The agents' demo keys are made once, by `load_demo` on an empty
database (controlplane.demo_credentials), never here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, TextIO

from django.conf import settings
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule

from agents import kpi_alerts, registry, triggers
from agents.envelope import AgentOutput, BudgetUsage, GraphError, GraphStateUpdate, JobEnvelopeIn
from agents.jobs import leases, results, submission
from agents.models import Agent, Escalation, Job, JobTrigger, KpiSample
from governance.kernel.principals import SYSTEM, Principal

MANIFESTS = Path(__file__).resolve().parent / "manifests"
NIGHTLY = {"minute": "0", "hour": "2", "day_of_month": "*", "month_of_year": "*", "day_of_week": "*"}
VLEVEL, INDEXER, ARCHITECT = "agent.seo.vlevel", "agent.rag.indexer", "agent.seo.architect"
DEMO_AGENTS = (VLEVEL, INDEXER, ARCHITECT)
HISTORY_DAYS = 14

# Daily KPI means before the demo jobs, chosen so the fleet page shows one agent per status:
# the architect is ok, the V-level agent warns on its success rate, the indexer is critical.
HISTORY: dict[str, dict[str, float]] = {
    ARCHITECT: {"task_success_rate": 0.93},
    VLEVEL: {"task_success_rate": 0.75, "avg_processing_time": 6200},
    INDEXER: {"task_success_rate": 0.82, "avg_processing_time": 9000},
}
WOBBLE = (-0.02, 0.0, 0.02)  # a deterministic day-to-day wiggle so the trend lines are not flat


@dataclass
class DemoJob:
    """One job to run: what is asked, the nodes the agent passes, and what it answers."""

    agent_id: str
    intent: str
    payload: dict[str, Any]
    scope: dict[str, Any]
    nodes: tuple[str, ...]
    output: dict[str, Any]
    errors: list[dict[str, Any]] = field(default_factory=list)


def _urls(*slugs: str) -> list[str]:
    return [f"https://shop.example.com/{slug}" for slug in slugs]


def _scores(urls: list[str], level: str) -> list[dict[str, str]]:
    return [{"url": url, "level": level} for url in urls]


def _vlevel_job(slugs: tuple[str, ...], *, scored: int, confidence: float, ms: int, **extra: Any) -> DemoJob:
    urls = _urls(*slugs)
    return DemoJob(
        agent_id=VLEVEL,
        intent="seo_audit",
        payload={"urls": urls},
        scope={"entityType": "page", "entityIds": urls},
        nodes=("fetch_pages", "score", "recommend", "done"),
        output={
            "success": True,
            "data": {"scores": _scores(urls[:scored], "V2"), "recommendations": []},
            "metrics": {"avg_processing_time": ms},
            "confidence": confidence,
            "nextAction": "complete",
        },
        **extra,
    )


def _indexer_job(count: int, *, indexed: int, ms: int, error_count: int = 0) -> DemoJob:
    documents = [{"id": f"doc-{count}-{n}", "source": "catalog"} for n in range(count)]
    return DemoJob(
        agent_id=INDEXER,
        intent="rag_reindex",
        payload={"documents": documents},
        scope={"entityType": "article", "limit": count},
        nodes=("chunk", "embed", "upsert", "done"),
        output={
            "success": True,
            "data": {"indexed": indexed},
            "metrics": {"avg_processing_time": ms},
            "error_count": error_count,
            "nextAction": "complete",
        },
    )


DEMO_JOBS = (
    # Succeed.
    _vlevel_job(("brake-pads", "oil-filters", "wipers"), scored=3, confidence=0.91, ms=4200),
    _vlevel_job(
        ("spark-plugs", "batteries"),
        scored=2,
        confidence=0.86,
        ms=5600,
        errors=[{"node": "fetch_pages", "message": "timeout fetching batteries, retried", "recoverable": True}],
    ),
    _indexer_job(3, indexed=3, ms=1800),
    _indexer_job(2, indexed=2, ms=2500),
    # Low confidence: escalated to the architect, who asks for a human (the reviewer inbox).
    _vlevel_job(("tyres", "headlights"), scored=2, confidence=0.55, ms=7400),
    # Counts more documents than it was given: INDEX_OVERCOUNT fails, errors escalate it.
    _indexer_job(2, indexed=3, ms=3100, error_count=4),
)
ARCHITECT_ANSWER = {
    "success": True,
    "data": {"decision": "Keep V2 for both pages; a person should confirm the headlights template."},
    "human_required": True,
    "confidence": 0.6,
    "nextAction": "escalate",
}


def load(out: TextIO) -> None:
    for path in sorted(MANIFESTS.glob("*.yaml")):
        manifest, created = registry.load_manifest(path.read_text(encoding="utf-8"), actor=SYSTEM)
        out.write(f"Manifest {manifest.agent.agent_id} {manifest.version}: {'activated' if created else 'unchanged'}\n")
    agents = {agent.agent_id: agent for agent in Agent.objects.filter(agent_id__in=DEMO_AGENTS)}
    if not Job.objects.filter(agent__in=agents.values()).exists():
        _run_jobs(agents)
        out.write(f"Demo jobs: {Job.objects.filter(agent__in=agents.values()).count()}\n")
    if not KpiSample.objects.filter(agent__in=agents.values(), job__isnull=True).exists():
        _add_history(agents)
        for agent in agents.values():  # as a result would: the critical indexer reaches the inbox
            kpi_alerts.judge(agent, agent.active_manifest_id, at=timezone.now())
    if VLEVEL in agents and not JobTrigger.objects.filter(name=NIGHTLY_AUDIT).exists():
        _add_trigger(agents[VLEVEL], out)


NIGHTLY_AUDIT = "vlevel-nightly-audit"


def _add_trigger(vlevel: Agent, out: TextIO) -> None:
    """A cron trigger auditing the shop front every night at 02:00, and its first job: the demo
    runs the next slot now, as beat will at 02:00 (the slot is the job's idempotency key, so beat
    does not run it twice). Its payload names the story, domain and project memory feeds it."""
    fields = {**NIGHTLY, "timezone": settings.TIME_ZONE}
    crontab = CrontabSchedule.objects.filter(**fields).first() or CrontabSchedule.objects.create(**fields)
    trigger = JobTrigger(
        name=NIGHTLY_AUDIT,
        agent=vlevel,
        kind=JobTrigger.Kind.CRON,
        description="Every night: V-level audit of the shop front's canonical pages.",
        intent="seo_audit",
        entity_type="page",
        payload={"urls": _urls("brake-pads", "tyres"), "story": "PD-204", "domain": "seo", "project": "shop-front"},
        priority="high",
        crontab=crontab,
    )
    trigger = triggers.save_trigger(trigger, actor=SYSTEM, changed=[])
    assert trigger.next_run_at is not None  # a cron trigger with its crontab
    triggers.fire_due(now=trigger.next_run_at)
    out.write(f"Job trigger {NIGHTLY_AUDIT}: cron {crontab}, first job queued\n")


def _work(job: Job, nodes: tuple[str, ...], output: dict[str, Any], errors: list[dict[str, Any]]) -> dict[str, Any]:
    """What a worker does with a job: lease it, report each node, then its result."""
    worker = Principal(agent=job.agent)
    job = leases.claim_lease(job, actor=worker, owner=f"{job.agent.agent_id}/demo-worker")
    for step, node in enumerate(nodes, start=1):
        update = GraphStateUpdate(
            currentNode=node,
            budget=BudgetUsage(tokensUsed=350 * step, docsRetrieved=step, apiCalls=2 * step),
            errors=[GraphError(**error) for error in errors if error["node"] == node],
        )
        job = results.update_state(job, update, actor=worker)
    return results.submit_result(job, AgentOutput.model_validate(output), actor=worker)


def _run_jobs(agents: dict[str, Agent]) -> None:
    for number, spec in enumerate(DEMO_JOBS, start=1):
        agent = agents[spec.agent_id]
        envelope = JobEnvelopeIn.model_validate(
            {
                "intent": spec.intent,
                "scope": spec.scope,
                "payload": spec.payload,
                "context": {"source": "manual", "userId": "demo"},
                "idempotencyKey": f"demo:{spec.agent_id}:{number}",
            }
        )
        job, _ = submission.submit_job(envelope, actor=Principal(agent=agent))
        _work(job, spec.nodes, spec.output, spec.errors)
    # The architect answers the V-level escalation (and hands it on to a person); the indexer's
    # escalation stays open in the architect's queue.
    escalated = Escalation.objects.filter(job__agent=agents[VLEVEL], child_job__isnull=False)
    escalation = escalated.select_related("child_job").first()
    if escalation is not None:
        _work(escalation.child_job, ("review_scores", "decide"), ARCHITECT_ANSWER, [])


def _add_history(agents: dict[str, Agent]) -> None:
    now = timezone.now()
    samples = [
        KpiSample(
            agent=agents[agent_id],
            metric_id=metric_id,
            value=round(mean * (1 + WOBBLE[day % len(WOBBLE)]), 4),
            recorded_at=now - timedelta(days=day, hours=2),
        )
        for agent_id, metrics in HISTORY.items()
        for metric_id, mean in metrics.items()
        for day in range(HISTORY_DAYS)
    ]
    KpiSample.objects.bulk_create(samples)
