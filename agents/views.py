"""Operator pages for the fleet and its jobs.

Views only gather: access through ``visible_to``, filters through forms and queryset methods,
KPI figures through ``agents.kpis``. An htmx request gets the partial it swaps in; a full load with
the same query string renders the same rows inside the layout, so pushed URLs stay shareable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from django.conf import settings
from django.contrib.auth.decorators import login_required, permission_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.http import content_disposition_header

from agents import registry, skills
from agents.forms import AgentFilterForm, JobFilterForm, KpiWindowForm
from agents.models import Agent, Job, KpiSample
from governance.kernel.access import signed_in
from governance.kernel.views import is_partial, render_page

JOBS_PER_PAGE = 50
RECENT_JOBS = 20
EXAMPLE_MANIFEST = Path(__file__).resolve().parent / "manifests" / "agent.seo.vlevel.yaml"  # seed 001's, unchanged

view_agents = permission_required("agents.view_agent", raise_exception=True)
view_jobs = permission_required("agents.view_job", raise_exception=True)


@login_required
@view_agents
def agent_list(request: HttpRequest) -> HttpResponse:
    visible = Agent.objects.visible_to(signed_in(request))
    form = AgentFilterForm(request.GET, owners=visible.owners())
    filters = form.values()
    status = filters.pop("status", "")
    agents = visible.filtered(**filters).ranked_by_kpi_status(settings.KPI_WINDOW_DAYS, status=status)
    context = {
        "form": form,
        "agents": agents,
        "window_days": settings.KPI_WINDOW_DAYS,
        # No agent at all, not filters matching none: the page then says how to add one.
        "fleet_is_empty": not agents and not visible.exists(),
    }
    return render_page(request, "agents/agent_list.html", "agents/partials/agent_rows.html", context)


@login_required
@view_agents
def example_manifest(request: HttpRequest) -> HttpResponse:
    """Seed 001's example manifest as shipped, to download from the empty fleet page and upload
    back (edited or not): a first agent starts from a document that validates."""
    return HttpResponse(
        EXAMPLE_MANIFEST.read_bytes(),
        content_type="application/yaml; charset=utf-8",
        headers={"Content-Disposition": content_disposition_header(as_attachment=True, filename=EXAMPLE_MANIFEST.name)},
    )


def _kpi_rows(agent: Agent, window_days: int) -> list[dict[str, Any]]:
    """The KPI report with each KPI's daily trend over the same window."""
    return [
        {**item, "trend": KpiSample.objects.trend(agent, item["metric_id"], window_days)}
        for item in KpiSample.objects.report(agent, window_days)
    ]


@login_required
@view_agents
def agent_detail(request: HttpRequest, agent_id: str) -> HttpResponse:
    agent = get_object_or_404(
        Agent.objects.visible_to(signed_in(request)).select_related("active_manifest"), agent_id=agent_id
    )
    window_form = KpiWindowForm(request.GET or None)
    window_days = window_form.days()
    context: dict[str, Any] = {
        "agent": agent,
        "window_form": window_form,
        "window_days": window_days,
        "kpis": _kpi_rows(agent, window_days),
    }
    if is_partial(request):
        return render(request, "agents/partials/kpi_table.html", context)
    manifest = agent.active_manifest
    document = registry.manifest_document(manifest.pk) if manifest else None
    context.update(
        manifests=agent.manifests.defer("document"),
        tools=manifest.tools.all() if manifest else [],
        skills=skills.skills_of(document) if document else [],
        inputs=document.get("inputs", []) if document else [],
        outputs=document.get("outputs", []) if document else [],
        recent_jobs=(
            Job.objects.visible_to(signed_in(request)).filter(agent=agent).for_list()[:RECENT_JOBS]
            if request.user.has_perm("agents.view_job")
            else None
        ),
    )
    return render(request, "agents/agent_detail.html", context)


@login_required
@view_agents
def manifest_detail(request: HttpRequest, agent_id: str, version: str) -> HttpResponse:
    """One version's document as YAML: what the agent was (or is) bound to."""
    agent = get_object_or_404(Agent.objects.visible_to(signed_in(request)), agent_id=agent_id)
    manifest = get_object_or_404(agent.manifests, version=version)
    document = yaml.safe_dump(manifest.document, sort_keys=True, allow_unicode=True)
    context = {"agent": agent, "manifest": manifest, "document": document}
    return render(request, "agents/manifest_detail.html", context)


@login_required
@view_jobs
def job_list(request: HttpRequest) -> HttpResponse:
    principal = signed_in(request)
    form = JobFilterForm(request.GET, agents=Agent.objects.visible_to(principal))
    jobs = Job.objects.visible_to(principal).for_list().filtered(**form.values())
    page = Paginator(jobs, JOBS_PER_PAGE).get_page(request.GET.get("page"))
    context = {"form": form, "page": page, "jobs": page.object_list}
    return render_page(request, "agents/job_list.html", "agents/partials/job_rows.html", context)


def _visible_job(request: HttpRequest, job_id: Any) -> Job:
    jobs = Job.objects.visible_to(signed_in(request)).select_related("agent", "manifest", "parent__agent")
    return get_object_or_404(jobs, pk=job_id)


@login_required
@view_jobs
def job_detail(request: HttpRequest, job_id: Any) -> HttpResponse:
    job = _visible_job(request, job_id)
    context = {
        "job": job,
        "escalations": job.escalations.select_related("target_agent", "child_job", "review_item"),
        "artifacts": job.artifact_files.defer("content"),
        "children": job.children.select_related("agent"),
    }
    return render(request, "agents/job_detail.html", context)


@login_required
@view_jobs
def job_artifact(request: HttpRequest, job_id: Any, kind: str) -> HttpResponse:
    """Download one R3 artifact; 404 until the job has finished and its artifacts exist."""
    job = _visible_job(request, job_id)
    artifact = job.artifact_files.filter(kind=kind).first()
    if artifact is None:
        raise Http404(f"Job {job.job_id} has no {kind} artifact yet.")
    response = HttpResponse(artifact.content, content_type=f"{artifact.content_type}; charset=utf-8")
    response["Content-Disposition"] = content_disposition_header(as_attachment=True, filename=artifact.name)
    return response
