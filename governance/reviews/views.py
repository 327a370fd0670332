"""Operator pages of the governance app: the reviewer inbox (contract pages: contract_views.py).

The inbox is one queue for every kind of review item. Views only gather and delegate: deciding
goes through ``governance.reviews.services.decide`` (which tells the app that opened the item), and an
htmx request gets back the partial it swaps in, so a decided row changes in place.

The pending list is compact, one line per item that expands to the whole item, filtered (kind,
agent, domain) and sorted (``InboxFilterForm``), paged, and driven from the keyboard
(static/js/inbox-keys.js). Any kind a reviewer may decide in bulk can be selected on the page or
taken with everything the filters match (``bulk_selected``, ``bulk_matching``), each item still
decided on its own terms; the page comes back with its filters, sort and page. The navigation bar
shows the pending count (``pending_badge``, a context processor).

The pending list keeps itself current by asking every few seconds with the version it shows
(``inbox_pending``): an unchanged inbox answers 204 after two index-only reads, so twenty
reviewers cost a handful of tiny requests a second and never hold a web thread, where one event
stream per open inbox ran out of streams (4 per process) as soon as reviewers paged quickly.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.core.paginator import Page, Paginator
from django.db.models import Count, Max, QuerySet
from django.http import HttpRequest, HttpResponse, QueryDict, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils import dateformat, timezone
from django.utils.functional import SimpleLazyObject
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from governance.kernel import live
from governance.kernel.access import signed_in
from governance.kernel.exceptions import Conflict, Forbidden, InvalidInput
from governance.reviews import kinds
from governance.reviews import services as reviews
from governance.reviews.forms import DecisionForm, InboxFilterForm
from governance.reviews.models import ReviewDecision, ReviewItem

RECENT_DECISIONS = 20
ITEMS_PER_PAGE = 25
BADGE_MAX = 999  # the navigation bar's count stops there
MAX_SHOWN = 1000  # pending rows a polling page may report; more is not a page a person reads
POLL_SECONDS = 3  # how often an open inbox asks whether anything changed
HASH_LENGTH = 64  # a content hash, as a selected row posts it
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
    "item_url",
    "amended_hash",
]
# Spreadsheets run cells starting with these as formulas; titles and comments come from agents.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

view_items = permission_required("governance.view_reviewitem", raise_exception=True)
decide_items = permission_required("governance.decide_reviewitem", raise_exception=True)


def _pending(request: HttpRequest) -> QuerySet[ReviewItem]:
    """The pending items the signed-in person may see (``visible_to``, as the badge and the API)."""
    pending = ReviewItem.objects.visible_to(signed_in(request)).filter(status=ReviewItem.Status.PENDING)
    return pending.select_related("agent")


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


def _bulk_codes() -> list[str]:
    """The kinds decided in bulk: every kind but those a reviewer must read one by one."""
    return [kind.code for kind in kinds.all() if kind.bulk]


def _bulk_context(matching: QuerySet[ReviewItem]) -> dict[str, Any]:
    """What "all matching" confirms: how many items the filters match that may be decided in
    bulk, and the newest of them, so items that arrive after the confirmation are never decided
    with it."""
    bulk = matching.filter(kind__in=_bulk_codes()).order_by().aggregate(count=Count("pk"), upto=Max("pk"))
    return {"bulk_count": bulk["count"], "bulk_upto": bulk["upto"]}


def _common_answers(items: Iterable[ReviewItem]) -> list[str]:
    """The answers the questions on the page offer, for "answer selected": each question takes
    the answer only if it is one of its own options (the others are skipped and counted)."""
    offered: dict[str, None] = {}
    for item in items:
        for answer in item.review_kind.answers(item.payload_dict):
            offered.setdefault(answer)
    return list(offered)


@login_required
@view_items
def inbox(request: HttpRequest) -> HttpResponse:
    form, matching = _filtered(request, request.GET)
    page = _page(request, matching)
    context = {
        "form": form,
        "page": page,
        "pending": page.object_list,
        "answers": _common_answers(page.object_list),
        "decisions": _recent_decisions(),
        "can_decide": _can_decide(request),
        "version": _version(),
        "poll_seconds": POLL_SECONDS,
        "back": _back_query(request.GET),
        **_bulk_context(matching),
    }
    return render(request, "governance/reviews/inbox.html", context)


@login_required
@view_items
@require_GET
def inbox_pending(request: HttpRequest) -> HttpResponse:
    """What the inbox polls, with the page's filters, sort and page number and the ``version``
    it shows. Nothing changed: 204, which htmx leaves alone. Otherwise the page sends the ids of
    the pending rows it shows (``row``); it gets back the items of its page it does not show yet,
    to append (so as rows are decided, the next ones move up), and, swapped out of band, the rows
    someone decided elsewhere, the recent decisions, the pending counts and the new version. Rows
    are never replaced wholesale, so a comment being typed or a button being clicked is never
    pulled from under the reviewer."""
    version = _version()
    if request.GET.get("version") == version:
        return HttpResponse(status=204)
    shown = {int(value) for value in request.GET.getlist("row")[:MAX_SHOWN] if value.isdigit()}
    _, matching = _filtered(request, request.GET)
    page = _page(request, matching)
    context = {
        "new_items": [item for item in page.object_list if item.pk not in shown],
        "decided_elsewhere": ReviewItem.objects.filter(pk__in=shown)
        .exclude(status=ReviewItem.Status.PENDING)
        .select_related("agent", "decision__user"),
        "decisions": _recent_decisions(),
        "can_decide": _can_decide(request),
        "matching_count": page.paginator.count,
        "version": version,
    }
    return render(request, "governance/reviews/partials/pending_poll.html", context)


@login_required
@view_items
@require_GET
def item_page(request: HttpRequest, item_id: int) -> HttpResponse:
    """One item at a stable address, the one notifications, the audit log and the CSV export link
    to: pending, it is decided here as in the list; decided or expired, it says by whom and when.
    An item the signed-in person may not see is the same 404 as one that does not exist."""
    visible = ReviewItem.objects.visible_to(signed_in(request)).select_related("agent", "decision__user")
    item = get_object_or_404(visible, pk=item_id)
    context = {"item": item, "can_decide": _can_decide(request), "expanded": True}
    return render(request, "governance/reviews/item.html", context)


def _item(item_id: int) -> ReviewItem:
    """The item with what its row shows, its decision included, in one query."""
    return get_object_or_404(ReviewItem.objects.select_related("agent", "decision__user"), pk=item_id)


def _row(request: HttpRequest, item: ReviewItem, status: int = 200, **extra: Any) -> HttpResponse:
    """The item's row after a decision was posted. Once it is decided, htmx is told
    (``inbox-decided``), so the list asks for the item that moves up at once."""
    context = {"item": item, "can_decide": _can_decide(request), **extra}
    response = render(request, "governance/reviews/partials/review_item.html", context, status=status)
    if item.status != ReviewItem.Status.PENDING:
        response["HX-Trigger"] = "inbox-decided"
    return response


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
    htmx only swaps 2xx answers, so refusals that the row should show (a bad form, edited
    arguments that are not JSON or that the tool refuses, someone faster, a deadline passed,
    content changed since it was shown) are 200 for htmx and 400/409 for other clients. A row
    refused with edited arguments comes back open with the reviewer's text, to be fixed; one
    approved with edited arguments comes back open on them."""
    item = _item(item_id)
    form = DecisionForm(request.POST, item=item)
    # What the reviewer typed, given back with a refusal rather than lost.
    edited = {"edited_arguments": request.POST["arguments"], "expanded": True} if "arguments" in request.POST else {}
    refused = 200 if request.htmx else 400
    if not form.is_valid():
        error = " ".join(message for messages in form.errors.values() for message in messages)
        return _row(request, item, status=refused, error=error, **edited)
    try:
        decided = reviews.decide(
            item.pk,
            actor=signed_in(request),
            decision=form.cleaned_data["decision"],
            comment=form.cleaned_data["comment"],
            answer=form.cleaned_data["answer"],
            shown_hash=form.cleaned_data["shown"],
            amendment=form.cleaned_data["arguments"],
        )
    except InvalidInput as exc:  # edited arguments the tool does not take, at their path
        return _row(request, _item(item_id), status=refused, error=exc.detail, **edited)
    except Conflict as exc:
        item, status = _item(item_id), 200 if request.htmx else 409
        if item.status != ReviewItem.Status.PENDING:
            return _row(request, item, status=status, notice=_already(item))
        if exc.extra.get("reason") == "changed":  # shown again as it is now, to decide again
            return _row(request, item, status=status, error=exc.detail)
        if exc.extra.get("reason") == "duplicate":  # edited into another pending request: decide that one
            return _row(request, item, status=status, error=exc.detail, **edited)
        return _row(request, item, status=status, notice=exc.detail)  # past its deadline
    except Forbidden as exc:
        return HttpResponse(exc.detail, status=403, content_type="text/plain; charset=utf-8")
    return _row(request, _item(item_id), expanded=decided.amended is not None)


_DONE = {"approve": "Approved", "reject": "Rejected", "answer": "Answered"}
_SKIPPED_BECAUSE = {
    reviews.CONFLICT: "decided meanwhile, past their deadline or changed since shown",
    reviews.FORBIDDEN: "not decided this way (a question is answered; an answer must be one of its options)",
    reviews.NOT_FOUND: "no longer there",
}


def _bulk_messages(request: HttpRequest, decision: str, outcome: reviews.BulkOutcome, stale: int = 0) -> None:
    if outcome.decided:
        messages.success(request, f"{_DONE[decision]} {outcome.decided} item{pluralize(outcome.decided)}.")
    reasons = {status: outcome.count(status) for status in _SKIPPED_BECAUSE}
    reasons[reviews.CONFLICT] += stale
    for status, count in reasons.items():
        if count:
            messages.warning(request, f"Skipped {count} item{pluralize(count)}: {_SKIPPED_BECAUSE[status]}.")


def _back_query(params: Any) -> str:
    """The inbox's filters, sort and page as a query string, which a bulk decision posts back
    (``back``) so the reviewer returns to the page they were on; only the inbox's own fields."""
    return urlencode({name: params.get(name) for name in (*InboxFilterForm.base_fields, "page") if params.get(name)})


def _back_to_inbox(request: HttpRequest) -> HttpResponse:
    back = reverse("reviews:inbox")
    # The page's own query when it sent it, else the filters the form posted.
    query = _back_query(QueryDict(request.POST["back"]) if "back" in request.POST else request.POST)
    target = f"{back}?{query}" if query else back
    return HttpResponseClientRedirect(target) if request.headers.get("HX-Request") else redirect(target)


def _bulk_decision(request: HttpRequest) -> tuple[str, str | None] | None:
    """The decision of a bulk form, and its answer for "answer": None when malformed."""
    decision, answer = request.POST.get("decision", ""), request.POST.get("answer") or None
    if decision not in _DONE or (decision == ReviewDecision.Decision.ANSWER) != (answer is not None):
        return None
    return decision, answer[:2000] if answer else None


@login_required
@decide_items
@require_POST
def bulk_selected(request: HttpRequest) -> HttpResponse:
    """Decide the items ticked on the page, one decision each (``reviews.decide_many``), each
    bound to the content its row showed: the box posts ``<id>:<hash>``. Rows decided meanwhile,
    changed since, or not decided this way are skipped and counted."""
    chosen = _bulk_decision(request)
    if chosen is None:
        return HttpResponse("Bad bulk decision: approve, reject, or answer with an answer.", status=400)
    shown: dict[int, str] = {}
    for value in request.POST.getlist("items")[:MAX_SHOWN]:
        item_id, _, content_hash = value.partition(":")
        if item_id.isdigit() and len(content_hash) == HASH_LENGTH:
            shown[int(item_id)] = content_hash
    if not shown:
        messages.info(request, "Select the items to decide first.")
        return _back_to_inbox(request)
    decision, answer = chosen
    visible = list(_pending(request).filter(pk__in=shown).values_list("pk", flat=True))
    outcome = reviews.decide_many(visible, actor=signed_in(request), decision=decision, answer=answer, shown=shown)
    _bulk_messages(request, decision, outcome, stale=len(shown) - len(visible))
    return _back_to_inbox(request)


@login_required
@decide_items
@require_POST
def bulk_matching(request: HttpRequest) -> HttpResponse:
    """Decide every pending item the filters match, on every page: the page asked the browser
    to confirm the count (``count``) up to the newest item it counted (``upto``). The match is
    read again here, so items decided meanwhile or no longer matching are skipped and reported,
    and items that came after the confirmation are left alone."""
    form, matching = _filtered(request, request.POST)
    chosen = _bulk_decision(request)
    count, upto = request.POST.get("count", ""), request.POST.get("upto", "")
    if not form.is_valid() or chosen is None or not count.isdigit() or not upto.isdigit():
        return HttpResponse("Bad bulk decision: filters, decision, count and upto.", status=400)
    decision, answer = chosen
    targets = list(matching.filter(kind__in=_bulk_codes(), pk__lte=int(upto)).values_list("pk", flat=True))
    outcome = reviews.decide_many(targets, actor=signed_in(request), decision=decision, answer=answer)
    _bulk_messages(request, decision, outcome, stale=max(int(count) - len(targets), 0))
    return _back_to_inbox(request)


class _Echo:
    """The csv module writes to a file; this "file" hands each line back to the stream."""

    def write(self, value: str) -> str:
        return value


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def _csv_rows(site: str) -> Iterator[str]:
    """The CSV lines; ``site`` (scheme and host) makes each item's page an address to open."""
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
                site + reverse("reviews:item", args=[item.pk]),
                decision.amended_hash,
            ]
        )


@login_required
@view_items
@require_GET
def decisions_csv(request: HttpRequest) -> StreamingHttpResponse:
    """Every decision, newest first, streamed so the export stays flat in memory however long
    the history. Cells that a spreadsheet would run as a formula are prefixed with a quote."""
    site = request.build_absolute_uri("/").rstrip("/")
    response = StreamingHttpResponse(_csv_rows(site), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="review-decisions.csv"'
    return response
