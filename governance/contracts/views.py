"""Operator pages of the contract catalog and its audit reports.

Reading the catalog needs ``governance.view_contract``; anything built from the audit (compliance,
reports, exports, failing outputs) also needs ``governance.view_contractcheck``. Every Viewer
holds both. Views only gather: figures come from ``governance.contracts.reports``, which reads the
daily aggregates. An htmx request gets the partial it swaps in; the same URL loaded in full renders
the whole page, so pushed URLs stay shareable.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from django.contrib.auth.decorators import login_required, permission_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_POST

from governance.contracts import reports as contract_reports
from governance.contracts import services as contracts
from governance.contracts.forms import CatalogFilterForm, SinceForm, SpecAuditForm
from governance.contracts.models import Contract, checked
from governance.kernel.exceptions import NotFound
from governance.kernel.views import is_partial

VIEW_CHECKS = "governance.view_contractcheck"
view_contracts = permission_required("governance.view_contract", raise_exception=True)
view_checks = permission_required(VIEW_CHECKS, raise_exception=True)


def _contract(name: str, number: Any = None) -> Contract:
    """The current version, or the asked-for one; 404 for a name, version or number that is not."""
    try:
        return contracts.version(name, int(number) if number not in (None, "") else None)
    except (NotFound, ValueError) as exc:
        raise Http404(f"No contract {name!r} in that version.") from exc


def _since(request: HttpRequest) -> tuple[SinceForm, date]:
    """The report window's first day; without ``?since=`` the form shows the default one."""
    if "since" in request.GET:
        form = SinceForm(request.GET)
    else:
        form = SinceForm(initial={"since": contract_reports.default_since()})
    return form, form.first_day()


def _download(body: str, filename: str, content_type: str) -> HttpResponse:
    response = HttpResponse(body, content_type=f"{content_type}; charset=utf-8")
    response["Content-Disposition"] = content_disposition_header(True, filename)
    return response


@login_required
@view_contracts
@require_GET
def catalog(request: HttpRequest) -> HttpResponse:
    """The current contracts, filtered by a search and a section; compliance of the default window."""
    form = CatalogFilterForm(request.GET, sections=contract_reports.sections())
    can_report = request.user.has_perm(VIEW_CHECKS)
    since = contract_reports.default_since()
    filters = form.values()
    rows = contract_reports.catalog(**filters, since=since if can_report else None)
    context = {"form": form, "rows": rows, "can_report": can_report, "since": since, "filtered": any(filters.values())}
    template = "governance/contracts/partials/table.html" if is_partial(request) else "governance/contracts/list.html"
    return render(request, template, context)


@login_required
@view_contracts
@require_GET
def detail(request: HttpRequest, name: str) -> HttpResponse:
    """One contract version: its fields and notes, its versions, its report and the spec audit."""
    contract = _contract(name, request.GET.get("version"))
    can_report = request.user.has_perm(VIEW_CHECKS)
    context: dict[str, Any] = {
        "contract": contract,
        "fields": contract.fields.all(),
        "notes": contract_reports.notes(contract),
        "versions": Contract.objects.filter(name=name).defer("notes", "content_sha256", "module", "section"),
        "spec_form": SpecAuditForm(initial={"version": contract.version}),
        "can_report": can_report,
    }
    if can_report:
        since_form, since = _since(request)
        context.update(since_form=since_form, report=contract_reports.contract_report(name, since))
    return render(request, "governance/contracts/detail.html", context)


@login_required
@view_contracts
@require_POST
def spec_audit(request: HttpRequest, name: str) -> HttpResponse:
    """Audit a prompt's declared output against the contract version the page shows. htmx only
    swaps 2xx answers, so a bad document is 200 for htmx (the partial says what is wrong) and 400
    for other clients."""
    form = SpecAuditForm(request.POST)
    contract = _contract(name, request.POST.get("version"))
    result = contract_reports.spec_audit(contract, form.cleaned_data["document"]) if form.is_valid() else None
    context = {"contract": contract, "spec_form": form, "result": result}
    status = 200 if result is not None or request.htmx else 400
    if request.htmx:
        return render(request, "governance/contracts/partials/spec_audit_result.html", context, status=status)
    return render(request, "governance/contracts/spec_audit.html", context, status=status)


@login_required
@view_checks
@require_GET
def report_export(request: HttpRequest, name: str, fmt: str) -> HttpResponse:
    """The report section of a contract as Markdown or CSV, over the same window as the page."""
    contract = _contract(name)
    _, since = _since(request)
    report = contract_reports.contract_report(contract.name, since)
    filename = f"contract-{contract.name}-since-{since.isoformat()}.{fmt}"
    if fmt == "csv":
        return _download(contract_reports.contract_csv(report), filename, "text/csv")
    return _download(contract_reports.contract_markdown(report), filename, "text/markdown")


@login_required
@view_checks
@require_GET
def agent_report(request: HttpRequest, agent_id: str) -> HttpResponse:
    """One agent's contracts, worst violation rate first."""
    agent = get_object_or_404(checked("agent")._default_manager.only("agent_id", "name"), agent_id=agent_id)
    since_form, since = _since(request)
    context = {
        "agent": agent,
        "since_form": since_form,
        "report": contract_reports.agent_report(agent.agent_id, since),
        "can_view_agent": request.user.has_perm("agents.view_agent"),
    }
    return render(request, "governance/contracts/agent.html", context)


@login_required
@view_checks
@require_GET
def fleet(request: HttpRequest) -> HttpResponse:
    """Every contract and every agent ranked by violation rate."""
    since_form, since = _since(request)
    context = {"since_form": since_form, "report": contract_reports.fleet_report(since)}
    return render(request, "governance/contracts/fleet.html", context)


@login_required
@view_checks
@require_GET
def fleet_export(request: HttpRequest, fmt: str) -> HttpResponse:
    _, since = _since(request)
    report = contract_reports.fleet_report(since)
    filename = f"contracts-fleet-since-{since.isoformat()}.{fmt}"
    if fmt == "csv":
        return _download(contract_reports.fleet_csv(report), filename, "text/csv")
    return _download(contract_reports.fleet_markdown(report), filename, "text/markdown")
