"""Operator pages of per-subject conversational memory: the subjects, one subject's whole memory,
and the correction of a wrong fact in place.

Reading needs ``memory.view_subject`` (every operator role holds it). Correcting a preference,
event or relationship needs the change or delete permission of that fact's model (Admin), and
goes through ``subjects.correct_fact``, which writes the audit row naming who and when. Fact
actions answer htmx with the table row to swap in, and other clients with a full page or a
redirect, so every action also works without JavaScript. The user profile has no correction here:
``correct_fact`` covers preferences, events and relationships only; a profile is corrected by
importing a corrected facts document.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Model
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from governance.kernel.access import signed_in
from governance.kernel.exceptions import NotFound
from governance.kernel.views import is_partial
from memory.models import Subject
from memory.subjects import reports as subject_reports
from memory.subjects import services as subjects
from memory.subjects.forms import FORMS, FactForm, SubjectSearchForm
from memory.subjects.reports import FACT_LABELS, FactRow

view_subjects = permission_required("memory.view_subject", raise_exception=True)
COLUMNS = {"preference": 7, "event": 7, "relationship": 6}  # data columns of each kind's table


def _perm(kind: str, action: str) -> str:
    return f"memory.{action}_{subjects.FACT_KINDS[kind][0]._meta.model_name}"


def _can(request: HttpRequest, kind: str) -> dict[str, Any]:
    """What the viewer may do to this kind of fact, and the table width that follows from it."""
    can_change = request.user.has_perm(_perm(kind, "change"))
    can_delete = request.user.has_perm(_perm(kind, "delete"))
    return {
        "can_change": can_change,
        "can_delete": can_delete,
        "columns": COLUMNS[kind] + (can_change or can_delete),
    }


@login_required
@view_subjects
@require_GET
def subject_list(request: HttpRequest) -> HttpResponse:
    """Every subject with its counts, filtered by the search box (htmx swaps only the table)."""
    form = SubjectSearchForm(request.GET)
    query = form.query()
    context = {"form": form, "query": query, **subject_reports.subject_list(query)}
    template = "memory/subjects/partials/table.html" if is_partial(request) else "memory/subjects/list.html"
    return render(request, template, context)


@login_required
@view_subjects
@require_GET
def subject_detail(request: HttpRequest, key: str) -> HttpResponse:
    subject = get_object_or_404(Subject, key=key)
    context = subject_reports.subject_page(subject)
    context["fact_groups"] = [
        {"kind": kind, "label": FACT_LABELS[kind], "rows": rows, **_can(request, kind)}
        for kind, rows in context.pop("facts").items()
    ]
    return render(request, "memory/subjects/detail.html", context)


# --- One fact ------------------------------------------------------------------------------------


def _fact(request: HttpRequest, key: str, kind: str, fact_id: str, action: str) -> tuple[Subject, Model]:
    """The subject and its fact, once the viewer may ``action`` it: 404 for an unknown kind, 403
    without the permission (before looking the fact up), 404 for a fact the subject does not have."""
    if kind not in subjects.FACT_KINDS:
        raise Http404(f"No kind of fact {kind!r}.")
    if not request.user.has_perm(_perm(kind, action)):
        raise PermissionDenied(f"This needs the {_perm(kind, action)} permission.")
    subject = get_object_or_404(Subject, key=key)
    model, id_field, _ = subjects.FACT_KINDS[kind]
    return subject, get_object_or_404(model, subject=subject, **{id_field: fact_id})


def _row(request: HttpRequest, subject: Subject, kind: str, fact: Model, template: str, **extra: Any) -> HttpResponse:
    """One fact's table row, in the mode ``template`` draws (display, edit or delete)."""
    status = extra.pop("status", 200)
    context = {"subject": subject, "row": FactRow.of(kind, fact), **_can(request, kind), **extra}
    return render(request, f"memory/subjects/partials/{template}.html", context, status=status)


def _page(request: HttpRequest, subject: Subject, kind: str, fact: Model, mode: str, **extra: Any) -> HttpResponse:
    """The same action as a page of its own, for clients without htmx."""
    status = extra.pop("status", 200)
    context = {"subject": subject, "row": FactRow.of(kind, fact), "mode": mode, "kind_label": FACT_LABELS[kind]}
    return render(request, "memory/subjects/fact.html", context | extra, status=status)


def _back(subject: Subject, kind: str, fact_id: str) -> str:
    return f"{reverse('memory:subject-detail', args=[subject.key])}#fact-{kind}-{fact_id}"


@login_required
@require_GET
def fact_row(request: HttpRequest, key: str, kind: str, fact_id: str) -> HttpResponse:
    """The row as the page shows it: what Cancel swaps back in."""
    subject, fact = _fact(request, key, kind, fact_id, "view")
    if not request.htmx:
        return redirect(_back(subject, kind, fact_id))
    return _row(request, subject, kind, fact, "fact_row")


@login_required
@require_http_methods(["GET", "POST"])
def fact_edit(request: HttpRequest, key: str, kind: str, fact_id: str) -> HttpResponse:
    """Correct a fact. htmx only swaps 2xx answers, so an invalid form is 200 for htmx (the row
    shows the errors) and 400 for other clients; an unchanged form writes nothing."""
    subject, fact = _fact(request, key, kind, fact_id, "change")
    form: FactForm = FORMS[kind](request.POST if request.method == "POST" else None, fact=fact, kind=kind)
    if request.method == "POST" and form.is_valid():
        changes = form.changes()
        try:
            if changes:
                subjects.correct_fact(subject, kind, fact_id, changes, actor=signed_in(request))
        except NotFound as exc:
            raise Http404(str(exc)) from exc
        except ValidationError as exc:  # a rule of the table the form did not know: still a form error
            form.add_error(None, exc)
        else:
            fact.refresh_from_db()
            note = "Saved." if changes else "Nothing changed."
            if request.htmx:
                return _row(request, subject, kind, fact, "fact_row", note=note)
            messages.success(request, f"{fact_id}: {note}")
            return redirect(_back(subject, kind, fact_id))
    status = 400 if form.is_bound and not request.htmx else 200
    if request.htmx:
        return _row(request, subject, kind, fact, "fact_row_edit", form=form, status=status)
    return _page(request, subject, kind, fact, "edit", form=form, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def fact_delete(request: HttpRequest, key: str, kind: str, fact_id: str) -> HttpResponse:
    """GET asks for confirmation (a row, or a page); POST deletes the fact and its searchable
    memory through ``correct_fact``."""
    subject, fact = _fact(request, key, kind, fact_id, "delete")
    if request.method == "GET":
        if request.htmx:
            return _row(request, subject, kind, fact, "fact_row_delete")
        return _page(request, subject, kind, fact, "delete")
    try:
        subjects.correct_fact(subject, kind, fact_id, None, actor=signed_in(request))
    except NotFound as exc:
        raise Http404(str(exc)) from exc
    if request.htmx:
        return _row(request, subject, kind, fact, "fact_row_deleted")
    messages.success(request, f"{fact_id} deleted.")
    return redirect(reverse("memory:subject-detail", args=[subject.key]) + f"#facts-{kind}")
