"""Operator pages of the governance app: the reviewer inbox (contract pages: contract_views.py).

The inbox is one queue for every kind of review item. Views only gather and delegate: deciding
goes through ``governance.reviews.services.decide`` (which tells the app that opened the item), and an
htmx request gets back the partial it swaps in, so a decided row changes in place.

The pending list is filtered (kind, agent, domain: ``InboxFilterForm``) and paged; "select all
matching" decides every pending promotion the filters match, on every page, after the browser
confirmed the count (``bulk_matching``). The navigation bar shows the pending count
(``pending_badge``, a context processor).

The pending list asks for what changed (``inbox_pending``) as soon as the inbox's event stream
(``inbox_events``, governance.kernel.live) says items came or were decided, and every 30 seconds
whatever happens, should the stream be refused or cut.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.core.paginator import Page, Paginator
from django.db.models import Count, Max, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import dateformat, timezone
from django.utils.functional import SimpleLazyObject
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from governance.kernel import live
from governance.kernel.access import signed_in
from governance.kernel.exceptions import Conflict, Forbidden
from governance.reviews import kinds
from governance.reviews import services as reviews
from governance.reviews.forms import DecisionForm, InboxFilterForm
from governance.reviews.models import ReviewDecision, ReviewItem

RECENT_DECISIONS = 20
ITEMS_PER_PAGE = 25
BADGE_MAX = 999  # the navigation bar's count stops there
MAX_SHOWN = 1000  # pending rows a polling page may report; more is not a page a person reads
CSV_COLUMNS = [
    "decided_at",
    "item_id",
    "kind",
    "title",
    "agent",
    "decision",
    "decided_by",
    "comment",
    "payload_hash",
    "key_minted_by",
]
# Spreadsheets run cells starting with these as formulas; titles and comments come from agents.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

view_items = permission_required("governance.view_reviewitem", raise_exception=True)
decide_items = permission_required("governance.decide_reviewitem", raise_exception=True)


def _pending(request: HttpRequest) -> QuerySet[ReviewItem]:
    """The pending items the signed-in person may see (``visible_to``, as the badge and the API)."""
    pending = ReviewItem.objects.visible_to(signed_in(request)).filter(status=ReviewItem.Status.PENDING)
    return pending.select_related("agent").order_by("created_at")


def _recent_decisions() -> QuerySet[ReviewDecision]:
    return ReviewDecision.objects.select_related("item__agent", "user").order_by("-decided_at")[:RECENT_DECISIONS]


def _can_decide(request: HttpRequest) -> bool:
    return request.user.has_perm("governance.decide_reviewitem")


def _version() -> str:
    """What the inbox shows, as a version (governance.kernel.live): a new item raises the last
    item id, and every decision (a reviewer's, an expiry, a withdrawal) the last decision id.
    Two index-only reads."""
    last_item = ReviewItem.objects.aggregate(last=Max("pk"))["last"]
    last_decision = ReviewDecision.objects.aggregate(last=Max("pk"))["last"]
    return live.version_of(last_item, last_decision)


def pending_badge(request: HttpRequest) -> dict[str, Any]:
    """Context processor: the number of pending items the signed-in person may see, for the
    navigation bar. Lazy, so a page that does not show the bar asks nothing; otherwise one COUNT,
    bounded like every count of a list that may grow (past ``BADGE_MAX`` it reads "999+")."""

    def count() -> str:
        if not request.user.is_authenticated or not request.user.has_perm("governance.view_reviewitem"):
            return ""
        pending = ReviewItem.objects.visible_to(signed_in(request)).filter(status=ReviewItem.Status.PENDING)
        found = pending.order_by()[: BADGE_MAX + 1].count()
        return f"{BADGE_MAX}+" if found > BADGE_MAX else str(found or "")

    return {"inbox_pending_count": SimpleLazyObject(count)}


def _filtered(request: HttpRequest, params: Any) -> tuple[InboxFilterForm, QuerySet[ReviewItem]]:
    form = InboxFilterForm(params, pending=_pending(request))
    return form, form.apply(_pending(request))


def _page(request: HttpRequest, matching: QuerySet[ReviewItem]) -> Page:
    return Paginator(matching, ITEMS_PER_PAGE).get_page(request.GET.get("page"))


def _bulk_kinds() -> list[kinds.ReviewKind]:
    """The kinds decided in bulk (selected, or all matching): today the learning promotions."""
    return [kind for kind in kinds.all() if kind.bulk]


def _bulk_context(form: InboxFilterForm, matching: QuerySet[ReviewItem]) -> dict[str, Any]:
    """What "select all matching" confirms: how many promotions match, and the newest of them,
    so items that arrive after the confirmation are never decided with it."""
    bulk = _bulk_kinds()
    promotions = (
        matching.filter(kind__in=[kind.code for kind in bulk]).order_by().aggregate(count=Count("pk"), upto=Max("pk"))
    )
    return {
        "bulk_count": promotions["count"],
        "bulk_upto": promotions["upto"],
        "bulk_label": " or ".join(kind.label for kind in bulk),
    }


@login_required
@view_items
def inbox(request: HttpRequest) -> HttpResponse:
    form, matching = _filtered(request, request.GET)
    page = _page(request, matching)
    context = {
        "form": form,
        "page": page,
        "pending": page.object_list,
        "decisions": _recent_decisions(),
        "can_decide": _can_decide(request),
        "version": _version(),
        **_bulk_context(form, matching),
    }
    return render(request, "governance/reviews/inbox.html", context)


@login_required
@view_items
@require_GET
def inbox_events(request: HttpRequest) -> HttpResponseBase:
    """The inbox's event stream: ``changed`` when an item comes in or is decided."""
    return live.stream(request, _version)


@login_required
@view_items
@require_GET
def inbox_pending(request: HttpRequest) -> HttpResponse:
    """What the inbox polls, with the page's filters and page number. The page sends the ids of
    the pending rows it shows (``shown``); it gets back the items of its page it does not show
    yet, to append (so as rows are decided, the next ones move up), and, swapped out of band, the
    rows someone decided elsewhere, the recent decisions and the pending count. Rows are never
    replaced wholesale, so a comment being typed or a button being clicked is never pulled from
    under the reviewer."""
    shown = {int(value) for value in request.GET.getlist("shown")[:MAX_SHOWN] if value.isdigit()}
    _, matching = _filtered(request, request.GET)
    context = {
        "new_items": [item for item in _page(request, matching).object_list if item.pk not in shown],
        "decided_elsewhere": ReviewItem.objects.filter(pk__in=shown)
        .exclude(status=ReviewItem.Status.PENDING)
        .select_related("agent", "decision__user"),
        "decisions": _recent_decisions(),
        "can_decide": _can_decide(request),
    }
    return render(request, "governance/reviews/partials/pending_poll.html", context)


def _item(item_id: int) -> ReviewItem:
    """The item with what its row shows, its decision included, in one query."""
    return get_object_or_404(ReviewItem.objects.select_related("agent", "decision__user"), pk=item_id)


@login_required
@view_items
@require_GET
def item_page(request: HttpRequest, item_id: int) -> HttpResponse:
    """One item at a stable address, the one notifications, the audit log and the CSV export link
    to: pending, it is decided here as in the list; decided or expired, it says by whom and when.
    An item the signed-in person may not see is the same 404 as one that does not exist."""
    visible = ReviewItem.objects.visible_to(signed_in(request)).select_related("agent", "decision__user")
    item = get_object_or_404(visible, pk=item_id)
    context = {"item": item, "can_decide": _can_decide(request)}
    return render(request, "governance/reviews/item.html", context)


def _row(request: HttpRequest, item: ReviewItem, status: int = 200, **extra: Any) -> HttpResponse:
    context = {"item": item, "can_decide": _can_decide(request), **extra}
    return render(request, "governance/reviews/partials/review_item.html", context, status=status)


def _already(item: ReviewItem) -> str:
    """Who decided first, in the words a second reviewer needs."""
    decision = getattr(item, "decision", None)
    if decision is None:
        return f"Already {item.status}."
    when = dateformat.format(timezone.localtime(decision.decided_at), "Y-m-d H:i:s T")
    return f"Already {item.status} by {decision.decider} at {when}."


@login_required
@decide_items
@require_POST
def decide(request: HttpRequest, item_id: int) -> HttpResponse:
    """One reviewer decision, bound to the content the row showed (its hash, posted as ``shown``).
    htmx only swaps 2xx answers, so refusals that the row should show (a bad form, someone
    faster, a deadline passed, content changed since it was shown) are 200 for htmx and 400/409
    for other clients."""
    item = _item(item_id)
    form = DecisionForm(request.POST, item=item)
    if not form.is_valid():
        error = " ".join(message for messages in form.errors.values() for message in messages)
        return _row(request, item, status=200 if request.htmx else 400, error=error)
    try:
        reviews.decide(
            item.pk,
            actor=signed_in(request),
            decision=form.cleaned_data["decision"],
            comment=form.cleaned_data["comment"],
            answer=form.cleaned_data["answer"],
            shown_hash=form.cleaned_data["shown"],
        )
    except Conflict as exc:
        item, status = _item(item_id), 200 if request.htmx else 409
        if item.status != ReviewItem.Status.PENDING:
            return _row(request, item, status=status, notice=_already(item))
        if exc.extra.get("reason") == "changed":  # shown again as it is now, to decide again
            return _row(request, item, status=status, error=exc.detail)
        return _row(request, item, status=status, notice=exc.detail)  # past its deadline
    except Forbidden as exc:
        return HttpResponse(exc.detail, status=403, content_type="text/plain; charset=utf-8")
    return _row(request, _item(item_id))


def _bulk_messages(request: HttpRequest, decision: str, outcome: reviews.BulkOutcome, stale: int, why: str) -> None:
    done = "Approved" if decision == ReviewDecision.Decision.APPROVE else "Rejected"
    if outcome.decided:
        messages.success(request, f"{done} {outcome.decided} promotion{'s' if outcome.decided != 1 else ''}.")
    skipped = outcome.skipped + stale
    if skipped:
        messages.warning(request, f"Skipped {skipped} item{'s' if skipped != 1 else ''} {why}.")


@login_required
@decide_items
@require_POST
def bulk_approve(request: HttpRequest) -> HttpResponseRedirect:
    """Approve the selected learning promotions, one decision each (``reviews.decide_many``, so
    the memory app applies each promotion as for a single approval). Rows already decided, by
    someone else or a moment ago, are skipped and counted; other kinds are never approved in bulk."""
    selected = {int(value) for value in request.POST.getlist("items")[:MAX_SHOWN] if value.isdigit()}
    if not selected:
        messages.info(request, "Select the promotions to approve first.")
        return redirect("reviews:inbox")
    bulk = [kind.code for kind in _bulk_kinds()]
    pending = list(_pending(request).filter(pk__in=selected, kind__in=bulk).values_list("pk", flat=True))
    decision = ReviewDecision.Decision.APPROVE
    outcome = reviews.decide_many(pending, actor=signed_in(request), decision=decision)
    _bulk_messages(request, decision, outcome, len(selected) - len(pending), "already decided or not a promotion")
    return redirect("reviews:inbox")


@login_required
@decide_items
@require_POST
def bulk_matching(request: HttpRequest) -> HttpResponse:
    """Approve or reject every pending promotion the filters match, on every page: the page
    asked the browser to confirm the count (``count``) up to the newest promotion it counted
    (``upto``). The match is read again here, so items decided meanwhile or no longer matching
    are skipped and reported, and items that came after the confirmation are left alone."""
    form, matching = _filtered(request, request.POST)
    decision = request.POST.get("decision", "")
    count, upto = request.POST.get("count", ""), request.POST.get("upto", "")
    if not form.is_valid() or decision not in ("approve", "reject") or not count.isdigit() or not upto.isdigit():
        return HttpResponse("Bad bulk decision: filters, decision, count and upto.", status=400)
    bulk = [kind.code for kind in _bulk_kinds()]
    targets = list(matching.filter(kind__in=bulk, pk__lte=int(upto)).values_list("pk", flat=True))
    outcome = reviews.decide_many(targets, actor=signed_in(request), decision=decision)
    stale = max(int(count) - len(targets), 0)
    _bulk_messages(request, decision, outcome, stale, "decided meanwhile or no longer matching")
    back = f"{reverse('reviews:inbox')}?{_form_query(form)}"
    return HttpResponseClientRedirect(back) if request.headers.get("HX-Request") else redirect(back)


def _form_query(form: InboxFilterForm) -> str:
    """The filters as a query string, for the page to come back to after a bulk decision."""
    return urlencode(form.values())


class _Echo:
    """The csv module writes to a file; this "file" hands each line back to the stream."""

    def write(self, value: str) -> str:
        return value


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def _csv_rows() -> Iterator[str]:
    writer = csv.writer(_Echo())
    yield writer.writerow(CSV_COLUMNS)
    decisions = ReviewDecision.objects.select_related("item__agent").order_by("-decided_at")
    for decision in decisions.iterator(chunk_size=500):
        item = decision.item
        yield writer.writerow(
            [
                decision.decided_at.isoformat(),
                item.pk,
                _cell(item.kind),
                _cell(item.title),
                item.agent.agent_id if item.agent else "",
                decision.decision,
                _cell(decision.decided_by),
                _cell(decision.comment),
                decision.payload_hash,
                _cell(decision.minted_by),
            ]
        )


@login_required
@view_items
@require_GET
def decisions_csv(request: HttpRequest) -> StreamingHttpResponse:
    """Every decision, newest first, streamed so the export stays flat in memory however long
    the history. Cells that a spreadsheet would run as a formula are prefixed with a quote."""
    response = StreamingHttpResponse(_csv_rows(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="review-decisions.csv"'
    return response
