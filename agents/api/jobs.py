"""Jobs router (/api/v1/jobs): submission, state, leases, results, artifacts."""

from typing import Any
from uuid import UUID

from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from ninja import Header, Router, Schema, Status
from ninja.pagination import paginate

from agents.access import owned_job, traced, visible_job
from agents.envelope import AgentOutput, GraphStateUpdate, JobEnvelopeIn
from agents.escalations import describe
from agents.jobs import leases, results, submission
from agents.models import Job, JobArtifact
from agents.schemas import EscalateIn, EscalationOut, JobOut, JobResultOut, LeaseIn
from governance.kernel.auth import caller
from governance.kernel.exceptions import NotFound
from governance.kernel.principals import Principal
from governance.kernel.validation import BoundedLimitOffsetPagination

router = Router(tags=["jobs"])


def serialize(job: Job) -> dict[str, Any]:
    """The JobOut document. Artifacts exist only once a job is finished, and escalations only once
    it has started or has a result, so younger jobs skip those two lookups (the hot path of
    submissions and idempotent replays)."""
    return {
        "jobId": job.job_id,
        "traceId": job.trace_id,
        "parentJobId": job.parent_id,
        "agentId": job.agent.agent_id,
        "intent": job.intent,
        "scope": job.scope,
        "payload": job.payload,
        "constraints": job.constraints,
        "context": job.context,
        "idempotencyKey": job.idempotency_key,
        "createdAt": job.created_at,
        "expiresAt": job.expires_at,
        "status": job.status,
        "startedAt": job.started_at,
        "finishedAt": job.finished_at,
        "lease": job,
        "graphState": job,
        "output": job.output,
        "preConditions": job.pre_conditions,
        "postConditions": job.post_conditions,
        "artifacts": []
        if not job.is_finished
        else [
            {**vars(a), "url": reverse("api:job_artifact", kwargs={"job_id": job.job_id, "kind": a.kind})}
            for a in job.artifact_files.all()
        ],
        "escalations": []
        if job.output is None and job.started_at is None and not job.is_finished
        else [describe(e) for e in job.escalations.select_related("target_agent")],
    }


@router.post("", operation_id="submit_job", response={200: JobOut, 201: JobOut})
def submit_job(request: HttpRequest, response: HttpResponse, data: JobEnvelopeIn) -> Status:
    """Submit a JobEnvelope. 201 created; 200 with `Idempotent-Replayed: true` and the original
    job when the same idempotency key was seen within the result TTL."""
    job, created = submission.submit_job(data, actor=caller(request))
    traced(job)
    if not created:
        response["Idempotent-Replayed"] = "true"
    return Status(201 if created else 200, serialize(job))


class JobValidationOut(Schema):
    valid: bool
    idempotencyKey: str
    replayOf: UUID | None = None
    preConditions: list[dict[str, Any]]


@router.post("/validate", operation_id="validate_job", response=JobValidationOut)
def validate_job(request: HttpRequest, data: JobEnvelopeIn) -> dict:
    """Check a JobEnvelope as `POST /jobs` would (R1, intent, parent, inputs, pre-conditions),
    writing nothing: 200 `{"valid": true, "idempotencyKey", "replayOf"}` (the job a submission
    would replay, if any), or the same 403/422 problem `POST /jobs` would answer."""
    return submission.validate_job(data, actor=caller(request))


class _LazySerialized:
    """Serialize only the page the paginator slices out."""

    def __init__(self, queryset: QuerySet[Job]) -> None:
        self.queryset = queryset

    def count(self) -> int:
        return self.queryset.count()

    def __len__(self) -> int:
        return self.count()

    def __getitem__(self, page: slice) -> list[dict]:
        return [serialize(job) for job in self.queryset[page]]


@router.get("", operation_id="list_jobs", response=list[JobOut])
@paginate(BoundedLimitOffsetPagination)
def list_jobs(
    request: HttpRequest, status: Job.Status | None = None, intent: str | None = None, agent: str | None = None
) -> _LazySerialized:
    """Jobs the caller may see, newest first, filtered by status, intent and agent id."""
    found: QuerySet[Job] = Job.objects.visible_to(caller(request)).select_related("agent", "manifest")
    if status:
        found = found.filter(status=status)
    if intent:
        found = found.filter(intent=intent)
    if agent:
        found = found.filter(agent__agent_id=agent)
    return _LazySerialized(found.prefetch_related("artifact_files"))


# Before /{job_id}: a path segment "lease" would otherwise be read as a job id.
@router.post("/lease", operation_id="lease_next_job", response={200: JobOut, 204: None})
def lease_next_job(request: HttpRequest, data: LeaseIn | None = None) -> Status:
    """Lease the calling agent's next ready job: by priority (critical, high, normal, low), then
    oldest first; 204 when none is ready. Concurrent workers each get a different job."""
    principal = caller(request)
    job = leases.lease_next(
        actor=principal, owner=_lease_owner(principal, data), ttl_seconds=data.ttlSeconds if data else None
    )
    return Status(200, serialize(traced(job))) if job is not None else Status(204, None)


@router.get("/{job_id}", operation_id="get_job", response=JobOut)
def get_job(request: HttpRequest, job_id: UUID) -> dict:
    return serialize(visible_job(caller(request), job_id))


@router.post("/{job_id}/lease", operation_id="lease_job", response=JobOut)
def lease_job(request: HttpRequest, job_id: UUID, data: LeaseIn | None = None) -> dict:
    """Take or renew the job's lease (lockTTL); 409 while another worker holds it."""
    principal = caller(request)
    job = owned_job(principal, job_id)
    ttl = data.ttlSeconds if data else None
    return serialize(leases.claim_lease(job, actor=principal, owner=_lease_owner(principal, data), ttl_seconds=ttl))


def _worker(principal: Principal, named: str | None) -> str:
    """The worker a lease or a write is for: as it named itself (`owner`, `X-Lease-Owner`), else
    the prefix of the key it calls with (every API caller has one; the label stands in otherwise)."""
    return named or (principal.api_key.prefix if principal.api_key else principal.label)


def _lease_owner(principal: Principal, data: LeaseIn | None) -> str:
    return _worker(principal, data.owner if data else None)


LEASE_OWNER = Header(
    None,
    alias="X-Lease-Owner",
    max_length=200,
    description="The writing worker, as it named itself in POST /lease (`owner`); defaults to the key's prefix.",
)


@router.post("/{job_id}/state", operation_id="update_state", response=JobOut)
def update_state(
    request: HttpRequest, job_id: UUID, data: GraphStateUpdate, lease_owner: str | None = LEASE_OWNER
) -> dict:
    """GraphState update. 409 when the job is finished, expired or past its timeout, when the
    caller is not the current lease owner (`X-Lease-Owner`, or the key's prefix) or its lease
    expired, and when a usage total passes its constraint (`maxTokens`, `maxDocs`, `budget` in
    dollars against `costUsed`)."""
    principal = caller(request)
    job = owned_job(principal, job_id)
    return serialize(results.update_state(job, data, actor=principal, writer=_worker(principal, lease_owner)))


@router.post("/{job_id}/result", operation_id="submit_result", response=JobResultOut)
def submit_result(request: HttpRequest, job_id: UUID, data: AgentOutput, lease_owner: str | None = LEASE_OWNER) -> dict:
    """AgentOutput: post-conditions and escalation triggers are evaluated. 409 as for state
    updates: only the current lease owner (or, before any lease, the owner agent) submits."""
    principal = caller(request)
    job = owned_job(principal, job_id)
    return results.submit_result(job, data, actor=principal, writer=_worker(principal, lease_owner))


@router.post("/{job_id}/escalate", operation_id="escalate_job", response={201: EscalationOut})
def escalate_job(request: HttpRequest, job_id: UUID, data: EscalateIn) -> Status:
    """The owner agent escalates the live job it works on with its own reason (201, the escalation
    routed as the manifest says); 409 before the job started, once it finished, and while an
    escalation of it is still open."""
    principal = caller(request)
    return Status(201, results.escalate(owned_job(principal, job_id), data.reason, actor=principal))


# The file itself, as text: audit.md as Markdown, backlog.json and graph.json as JSON. Markdown is named first so that
# a generated client hands back the text of any of the three rather than parsing one kind as JSON.
ARTIFACT_FILE = {
    "responses": {
        "200": {
            "description": "The artifact file (Content-Disposition names it).",
            "content": {
                "text/markdown": {"schema": {"type": "string"}},
                "application/json": {"schema": {"type": "object"}},
            },
        }
    }
}


@router.get(
    "/{job_id}/artifacts/{kind}",
    operation_id="download_artifact",
    url_name="job_artifact",
    response={200: None},
    openapi_extra=ARTIFACT_FILE,
)
def download_artifact(request: HttpRequest, job_id: UUID, kind: JobArtifact.Kind) -> HttpResponse:
    job = visible_job(caller(request), job_id)
    artifact = job.artifact_files.filter(kind=kind).first()
    if artifact is None:
        raise NotFound(f"Job {job_id} has no {kind} artifact (artifacts exist once the job is finished).")
    response = HttpResponse(artifact.content, content_type=f"{artifact.content_type}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{artifact.name}"'
    return response
