"""Operator pages for AI sessions: the filtered list, one session's thread and timeline, STOP.

Views only gather and delegate (STOP goes through ``sessions.scheduler.stop``, like the API).
As on the fleet pages, an htmx request gets the partial it swaps in, and a full load with the
same query string renders the same rows inside the layout, so pushed URLs stay shareable.

A session's page stays live: it refreshes its state, timeline and thread (``session_live``) when
the session's event stream (``session_events``, governance.kernel.live) says they changed, and
every 30 seconds whatever happens, should the stream be refused or cut.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.db.models import Max
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from governance.kernel import live
from governance.kernel.access import signed_in
from governance.kernel.exceptions import Conflict
from governance.kernel.pagination import EstimatedCountPaginator
from governance.kernel.views import is_partial
from governance.reviews.models import ReviewItem
from sessions import scheduler
from sessions.forms import SessionFilterForm
from sessions.machine import Phase
from sessions.models import AISession, SessionMessage

SESSIONS_PER_PAGE = 50
ASKS = ("dataCommands", "actionCommands", "communicationModule")  # what an AI message can ask for

view_sessions = permission_required("ai_sessions.view_aisession", raise_exception=True)
change_sessions = permission_required("ai_sessions.change_aisession", raise_exception=True)


@login_required
@view_sessions
def session_list(request: HttpRequest) -> HttpResponse:
    form = SessionFilterForm(request.GET)
    filters = form.values()
    lookups = {"type": filters.get("type"), "phase": filters.get("phase"), "is_active": filters.get("active")}
    sessions = (
        AISession.objects.select_related("agent")
        .filter(**{field: value for field, value in lookups.items() if value is not None})
        .order_by("-created_at")
    )
    page = EstimatedCountPaginator(sessions, SESSIONS_PER_PAGE).get_page(request.GET.get("page"))
    context = {"form": form, "page": page, "sessions": page.object_list}
    template = "sessions/partials/session_rows.html" if is_partial(request) else "sessions/session_list.html"
    return render(request, template, context)


@dataclass(frozen=True)
class Moment:
    """One line of the timeline: when, who or what, and a short description."""

    at: datetime
    kind: str
    label: str
    detail: str = ""


def _message_moment(message: SessionMessage) -> Moment:
    if message.sender == SessionMessage.Sender.SYSTEM:
        detail = (message.system_message or {}).get("summary") or ""
        return Moment(message.timestamp, "system", f"System: {message.system_type or 'message'}", detail)
    if message.sender == SessionMessage.Sender.AI:
        if message.ai_message is not None:
            commands = [name for name in ASKS if message.ai_message.get(name)]
            detail = "with " + ", ".join(commands) if commands else "text only"
        else:
            detail = "follow-up text" if not message.fallback_kind else message.fallback_kind
        return Moment(message.timestamp, "ai", "AI answered", detail)
    return Moment(message.timestamp, "user", "User message", "")


def _timeline(messages: list[SessionMessage], reviews: list[ReviewItem]) -> list[Moment]:
    """The session's history from what it keeps: its messages in order, and the review items it
    opened with their decisions. The processor writes no audit rows of its own for sessions, so
    phases in between are not recorded; the current one is shown beside the timeline."""
    moments = [_message_moment(message) for message in messages]
    for item in reviews:
        moments.append(Moment(item.created_at, "review", f"Review #{item.pk} opened", item.title))
        decision = getattr(item, "decision", None)
        if decision is not None:
            who = decision.user.get_username() if decision.user else decision.decided_by
            moments.append(Moment(decision.decided_at, "review", f"Review #{item.pk} {item.status}", f"by {who}"))
    return sorted(moments, key=lambda moment: moment.at)


def _state_context(request: HttpRequest, session: AISession, **extra: Any) -> dict[str, Any]:
    can_stop = request.user.has_perm("ai_sessions.change_aisession") and session.phase != Phase.COMPLETED
    return {"session": session, "can_stop": can_stop, **extra}


def _session(session_id: UUID) -> AISession:
    return get_object_or_404(AISession.objects.select_related("agent", "automation"), pk=session_id)


def _version(session_id: UUID) -> str:
    """What the page shows of the session, as a version (governance.kernel.live): its state card
    and its last message. One indexed query."""
    state = (
        AISession.objects.filter(pk=session_id)
        .annotate(last_seq=Max("messages__seq"))
        .values_list(
            "phase",
            "is_active",
            "end_reason",
            "total_roundtrips",
            "last_event_time",
            "waiting_context",
            "queued_at",
            "last_seq",
        )
        .first()
    )
    return live.version_of(state)


def _page_context(request: HttpRequest, session: AISession) -> dict[str, Any]:
    """The thread, the timeline and the state card, as the page and its refresh show them."""
    thread = list(session.messages.filter(removed_at__isnull=True).order_by("seq"))
    reviews = list(
        ReviewItem.objects.filter(payload__session=str(session.pk)).select_related("decision__user").order_by("pk")
    )
    last_seq = session.messages.aggregate(last=Max("seq"))["last"] or 0
    timeline = _timeline(thread, reviews)
    return _state_context(request, session, thread=thread, timeline=timeline, reviews=reviews, last_seq=last_seq)


@login_required
@view_sessions
def session_detail(request: HttpRequest, session_id: UUID) -> HttpResponse:
    session = _session(session_id)
    context = _page_context(request, session)
    return render(request, "sessions/session_detail.html", {**context, "version": _version(session.pk)})


@login_required
@view_sessions
@require_GET
def session_live(request: HttpRequest, session_id: UUID) -> HttpResponse:
    """What the page refreshes: the state card and the timeline, and the thread too (swapped out
    of band) when it has messages the page does not show (``after``: its last message number).
    The thread is left alone otherwise, so a message being read keeps its opened details."""
    session = _session(session_id)
    context = _page_context(request, session)
    shown = request.GET.get("after", "")
    context["thread_changed"] = not shown.isdigit() or int(shown) != context["last_seq"]
    return render(request, "sessions/partials/session_live.html", context)


@login_required
@view_sessions
@require_GET
def session_events(request: HttpRequest, session_id: UUID) -> HttpResponseBase:
    """The session's event stream: ``changed`` when its state or messages change."""
    session = _session(session_id)
    return live.stream(request, lambda: _version(session.pk))


@login_required
@change_sessions
@require_POST
def session_stop(request: HttpRequest, session_id: UUID) -> HttpResponse:
    """STOP from the page: the session ends CANCELLED and never resumes. Stopping one that has
    already ended is not an error page: the state card says so."""
    session = _session(session_id)
    try:
        session = scheduler.stop(session, actor=signed_in(request))
        notice = "Stopped: the session ended as cancelled."
    except Conflict as exc:
        session = _session(session_id)
        notice = f"Not stopped: {exc.detail}"
    if not request.htmx:
        messages.info(request, notice)
        return redirect("sessions:session-detail", session_id=session.pk)
    return render(request, "sessions/partials/session_state.html", _state_context(request, session, notice=notice))
