"""Agents router (/api/v1/agents): the fleet, manifests, KPIs and tool calls."""

from __future__ import annotations

import json

from django.conf import settings
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from ninja import Router, Status
from ninja.pagination import paginate

from agents import registry, tools
from agents.access import get_agent_for, visible_agent
from agents.manifest import MAX_DOCUMENT_BYTES
from agents.models import Agent, Job, KpiSample
from agents.schemas import AgentIn, AgentOut, KpiReportOut, ManifestOut, ToolApprovalPendingOut, ToolCallIn, ToolCallOut
from agents.services import register_agent
from governance.kernel import metrics
from governance.kernel.auth import caller
from governance.kernel.exceptions import DomainError, InvalidInput
from governance.kernel.validation import BoundedLimitOffsetPagination

router = Router(tags=["agents"])

YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml")
MANIFEST_BODY = {
    "requestBody": {
        "required": True,
        "description": "The manifest as in seed 001 (`Agent:` root optional), JSON or YAML.",
        "content": {
            "application/json": {"schema": {"type": "object"}},
            # The raw YAML text; `binary` lets a generated client send it as is (a `File`).
            "application/yaml": {"schema": {"type": "string", "format": "binary"}},
        },
    }
}


def _manifest_response(manifest, status: int, warnings: list[dict] | None = None) -> HttpResponse:
    body = manifest.document if warnings is None else {**manifest.document, "warnings": warnings}
    response = HttpResponse(json.dumps(body), status=status, content_type="application/json")
    response["ETag"] = f'"{manifest.content_hash}"'
    response["Last-Modified"] = manifest.created_at.strftime("%a, %d %b %Y %H:%M:%S GMT")
    response["X-Manifest-Active"] = "true" if manifest.agent.active_manifest_id == manifest.pk else "false"
    return response


@router.get("", operation_id="list_agents", response=list[AgentOut])
@paginate(BoundedLimitOffsetPagination)
def list_agents(request: HttpRequest) -> QuerySet[Agent]:
    """The agents the caller may see: an agent key sees only its own agent."""
    return Agent.objects.visible_to(caller(request)).select_related("active_manifest")


@router.post("", operation_id="create_agent", response={201: AgentOut})
def create_agent(request: HttpRequest, data: AgentIn) -> Status:
    """Register an agent (operators with `agents.add_agent`); 409 when the id is taken."""
    return Status(201, register_agent(actor=caller(request), agent_id=data.agent_id, name=data.name))


@router.get("/{agent_id}", operation_id="get_agent", response=AgentOut)
def get_agent(request: HttpRequest, agent_id: str) -> Agent:
    """One agent: an agent key reads only its own agent (another is 404); operators need `agents.view_agent`."""
    return visible_agent(caller(request), agent_id)


@router.put(
    "/{agent_id}/manifest",
    operation_id="put_manifest",
    openapi_extra=MANIFEST_BODY,
    response={200: ManifestOut, 201: ManifestOut},
)
def put_manifest(request: HttpRequest, agent_id: str) -> HttpResponse:
    """Load a manifest version: 201 stored and active, 200 identical to the active version,
    409 same version with other content or a lower version, 422 invalid (with field paths).
    The answer is the stored document plus `warnings`: what loads but is not enforced (optional
    skills the registry cannot run); a schema name that resolves neither in `schemas:` nor in the
    registry of named schemas is a 422 at its path. The permission is checked before the body
    is read, and reading is bounded (size, nesting, YAML aliases): 403 costs nothing, 422 little."""
    principal = caller(request)
    registry.require_manifest_permission(principal)
    if len(request.body) > MAX_DOCUMENT_BYTES:
        msg = f"a manifest is at most {MAX_DOCUMENT_BYTES // 1024} KiB"
        raise InvalidInput(msg, errors=[{"loc": ["body"], "msg": msg, "type": "manifest_syntax"}])
    try:
        text = request.body.decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = "the body is not UTF-8 text"
        raise InvalidInput(msg, errors=[{"loc": ["body"], "msg": msg, "type": "encoding"}]) from exc
    parsed = registry.parse_manifest(text, agent_id=agent_id, json_text=request.content_type not in YAML_TYPES)
    manifest, created = registry.store_manifest(parsed, actor=principal)
    return _manifest_response(manifest, 201 if created else 200, registry.manifest_warnings(parsed))


@router.get("/{agent_id}/manifest", operation_id="get_manifest", response=ManifestOut)
def get_manifest(request: HttpRequest, agent_id: str, version: str | None = None) -> HttpResponse:
    """The active manifest, or `?version=` for an older one."""
    agent = visible_agent(caller(request), agent_id)
    return _manifest_response(registry.manifest_for(agent, version), 200)


@router.get("/{agent_id}/kpis", operation_id="get_kpis", response=KpiReportOut)
def get_kpis(request: HttpRequest, agent_id: str, window_days: int | None = None) -> dict:
    """Each KPI's mean over the window (default KPI_WINDOW_DAYS) and its status."""
    window = settings.KPI_WINDOW_DAYS if window_days is None else window_days
    if not 1 <= window <= 366:
        msg = "window_days must be between 1 and 366"
        raise InvalidInput(msg, errors=[{"loc": ["query", "window_days"], "msg": msg, "type": "range"}])
    agent = visible_agent(caller(request), agent_id)
    return {"window_days": window, "items": KpiSample.objects.report(agent, window)}


@router.post(
    "/{agent_id}/tools/{tool_id}/calls",
    operation_id="record_tool_call",
    response={201: ToolCallOut, 202: ToolApprovalPendingOut},
)
def record_tool_call(request: HttpRequest, agent_id: str, tool_id: str, data: ToolCallIn | None = None) -> Status:
    """Record one call of a manifest tool before making it: 403 when the manifest lacks the tool
    or the permission, 429 with Retry-After over the tool's rate limit. A tool that requires
    approval answers 202 with the review item until a reviewer approved these very arguments;
    the approval is then good for one call. A reviewer may approve edited arguments instead: asking
    again with the original ones is then 409 whose `argumentsEdited` holds the approved arguments
    and each change, and the call with those is the one allowed (201, with `argumentsEdited`)."""
    principal = caller(request)
    agent = get_agent_for(principal, agent_id)
    job = None
    if data is not None and data.jobId is not None:
        job = Job.objects.filter(pk=data.jobId, agent=agent).first()
        if job is None:
            msg = f"no job {data.jobId} of this agent"
            raise InvalidInput(msg, errors=[{"loc": ["body", "jobId"], "msg": msg, "type": "not_found"}])
    permission = data.permission.value if data is not None and data.permission else None
    arguments = data.arguments if data is not None else {}
    try:
        outcome = tools.record_call(
            agent, tool_id, actor=principal, permission=permission, arguments=arguments, job=job
        )
    except DomainError as exc:
        metrics.TOOL_REFUSALS.labels(type(exc).__name__).inc()  # the reasons the gateway logs too
        raise
    if isinstance(outcome, tools.PendingApproval):
        metrics.TOOL_REFUSALS.labels("PendingApproval").inc()
        return Status(202, {"reviewItemId": outcome.review_item_id, "status": outcome.status})
    return Status(201, outcome)
