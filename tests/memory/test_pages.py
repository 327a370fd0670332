"""Memory pages (health overview, learning detail) and the inbox's bulk approval of promotions:
who sees what, what is counted and drawn, and that query counts stay flat as memory grows."""

from __future__ import annotations

import re
from datetime import date, timedelta
from decimal import Decimal
from html import unescape

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from governance.kernel.principals import SYSTEM, Principal
from governance.reviews import services as reviews
from governance.reviews.models import ReviewItem
from memory import clarifications, lifecycle, reports, scoring, watch_notes
from memory.learnings import create_learning
from memory.models import GateResult, Learning, LearningInjection, PromotionProposal, ReuseScore
from memory.tags import compute_tags_hash
from tests.factories.memory import GateResultFactory

OVERVIEW = "memory:memory-overview"
DETAIL = "memory:learning-detail"
BULK = "reviews:inbox-bulk-selected"


def learning(story: str = "PD-1", *, gate: int = 3, tags: tuple[str, ...] = ("#api",), **kw) -> Learning:
    return create_learning(
        actor=SYSTEM,
        story=story,
        gate=gate,
        domain=kw.pop("domain", "seo"),
        project=kw.pop("project", "shop"),
        tags=list(tags),
        text=kw.pop("text", f"Check the canonical URLs of {story}."),
        **kw,
    )


def inject(item: Learning, times: int = 1, *, days_ago: int = 0, story: str = "PD-900", domain: str = "seo") -> None:
    """``times`` injections of ``item``, each into its own story (``story``-0, -1, ...): a score
    counts one injection per story."""
    at = timezone.now() - timedelta(days=days_ago)
    LearningInjection.objects.bulk_create(
        LearningInjection(
            learning=item, story=f"{story}-{n}", domain=domain, project="shop", at=at - timedelta(seconds=n)
        )
        for n in range(times)
    )


def page(client: Client, name: str, *args: object) -> str:
    response = client.get(reverse(name, args=args))
    assert response.status_code == 200
    return unescape(response.content.decode())


def stat(html: str, label: str) -> int:
    """The number shown next to a label in the health page's counters."""
    match = re.search(rf'<span class="stat-value">(\d+)</span><span class="stat-label">{label}', html)
    assert match, label
    return int(match.group(1))


@pytest.fixture
def as_viewer(client, viewer) -> Client:
    client.force_login(viewer)
    return client


@pytest.fixture
def as_reviewer(client, reviewer) -> Client:
    client.force_login(reviewer)
    return client


# Access ----------------------------------------------------------------------------------------


@pytest.fixture
def memory_urls(db) -> list[str]:
    return [reverse(OVERVIEW), reverse(DETAIL, args=[learning().pk])]


def test_memory_pages_send_anonymous_visitors_to_the_login(client, memory_urls):
    for url in memory_urls:
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login"))


def test_memory_pages_are_forbidden_without_the_view_permission(client, outsider, memory_urls):
    client.force_login(outsider)
    for url in memory_urls:
        assert client.get(url).status_code == 403, url


def test_memory_pages_answer_every_operator_role(client, viewer, reviewer, admin_operator, memory_urls):
    for user in (viewer, reviewer, admin_operator):
        client.force_login(user)
        for url in memory_urls:
            assert client.get(url).status_code == 200, (user, url)


def test_the_memory_page_keeps_its_url_and_nav_entry(as_viewer):
    assert reverse(OVERVIEW) == "/memory/"
    assert 'href="/memory/" aria-current="page"' in page(as_viewer, OVERVIEW)


@pytest.mark.django_db
def test_an_unknown_learning_is_not_found(as_viewer):
    assert as_viewer.get(reverse(DETAIL, args=[999999])).status_code == 404


# Health ----------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_empty_memory_shows_zeros_flat_charts_and_empty_lists(as_viewer):
    html = page(as_viewer, OVERVIEW)

    assert stat(html, "Learnings") == 0
    assert html.count("<svg") == 3
    assert "No learning has been scored yet" in html
    assert "No scoring run yet." in html


@pytest.mark.django_db
def test_the_health_page_counts_learnings_per_scope(as_viewer):
    for scope, count in (("story", 3), ("domain", 2), ("global", 1), ("archived", 4)):
        for n in range(count):
            Learning.objects.filter(pk=learning(f"PD-{scope[:2].upper()}{n}").pk).update(scope=scope)

    html = page(as_viewer, OVERVIEW)

    assert stat(html, "Learnings") == 10
    assert (stat(html, "Story"), stat(html, "Domain"), stat(html, "Global"), stat(html, "Archived")) == (3, 2, 1, 4)


@pytest.mark.django_db
def test_the_health_page_draws_injections_promotions_and_evictions_per_day(as_viewer, reviewer):
    item, old = learning("PD-1"), learning("PD-2", date_created=timezone.localdate() - timedelta(days=90))
    inject(item, 3)
    inject(item, 2, days_ago=5)
    inject(item, 4, days_ago=40)  # outside the 30-day window
    scoring.compute_reuse_scores(full=True)
    lifecycle.propose_promotions(mode="auto")
    lifecycle.evict()

    html = page(as_viewer, OVERVIEW)

    assert html.count("<svg") == 3
    assert html.count('<polyline class="trend"') == 3
    totals = re.findall(r"<span>([^<]+)</span> <strong class=\"daily-total\">(\d+)</strong>", html)
    assert totals == [("Injections", "5"), ("Promotions applied", "1"), ("Evictions", "1")]
    old.refresh_from_db()
    assert old.scope == "archived"


@pytest.mark.django_db
def test_daily_counts_cover_every_day_of_the_window_with_zeros_between():
    item = learning()
    inject(item, 2, days_ago=0)
    inject(item, 1, days_ago=3)
    today = timezone.localdate()

    series = reports.daily_counts(LearningInjection.objects.all(), "at", "Injections", today=today)

    assert len(series["trend"]) == reports.WINDOW_DAYS
    assert series["trend"][0][0] == (today - timedelta(days=29)).isoformat()
    assert series["trend"][-1] == (today.isoformat(), 2.0)
    assert series["trend"][-4] == ((today - timedelta(days=3)).isoformat(), 1.0)
    assert sum(value for _, value in series["trend"]) == series["total"] == 3


@pytest.mark.django_db
def test_the_top_list_ranks_learnings_by_reuse_score_and_links_to_their_detail(as_viewer):
    items = [learning(f"PD-{n}", text=f"Lesson number {n}") for n in range(12)]
    for n, item in enumerate(items):
        inject(item, n + 1)
    never = learning("PD-99", text="Never reused lesson")
    scoring.compute_reuse_scores(full=True)

    html = page(as_viewer, OVERVIEW)

    links = re.findall(r'<a href="/memory/learnings/(\d+)/">Lesson number (\d+)</a>', html)
    assert [int(n) for _, n in links] == list(range(11, 1, -1))  # the ten best, best first
    assert [int(pk) for pk, _ in links] == [items[n].pk for n in range(11, 1, -1)]
    assert "Never reused lesson" not in html
    assert reverse(DETAIL, args=[never.pk]) not in html


@pytest.mark.django_db
def test_the_health_page_lists_the_last_scoring_runs(as_viewer):
    inject(learning(), 1)
    scoring.compute_reuse_scores(full=True)
    scoring.compute_reuse_scores()

    html = page(as_viewer, OVERVIEW)

    assert "No scoring run yet." not in html
    assert html.count("<td>Full</td>") == 1
    assert html.count("<td>Incremental</td>") == 1


@pytest.mark.django_db
def test_the_health_page_shows_what_a_full_run_corrected(as_viewer):
    item = learning()
    inject(item, 1)
    scoring.compute_reuse_scores(full=True)
    ReuseScore.objects.update(nb_injections=9)
    scoring.compute_reuse_scores(full=True)

    html = page(as_viewer, OVERVIEW)

    assert "Corrected / created / removed" in html
    assert '<td class="num">1 / 0 / 0</td>' in html
    assert '<td class="num">0 / 1 / 0</td>' in html


@pytest.mark.django_db
def test_the_health_page_counts_watch_notes_clarifications_and_waiting_promotions(as_viewer):
    note = "---\ntitle: pgvector 0.8\ndate: 2026-11-01\nverdict_veille: signal\nimpact_pv: fort\n---\n\nBody.\n"
    watch_notes.add_note(note, "demo/pgvector.md", actor=SYSTEM)
    answers = ["One.", "Two.", "Three.", "Four."]
    for _ in range(2):
        clarifications.persist_clarifications(story="PD-7", domain="seo", project="shop", answers=answers, actor=SYSTEM)
    inject(learning(), 1)
    scoring.compute_reuse_scores(full=True)
    lifecycle.propose_promotions(mode="review")

    html = page(as_viewer, OVERVIEW)

    assert stat(html, "Watch notes") == 1
    assert "1 signal, 1 with a strong impact" in html
    assert stat(html, "Clarifications") == 2
    assert "1 story, 8 answers" in html
    assert stat(html, '<a href="/inbox/">Promotions waiting for review') == 1


def fill_memory(learnings: int) -> None:
    """``learnings`` rows with injections, gate results, scores, proposals and scoring runs."""
    today = timezone.localdate()
    rows = Learning.objects.bulk_create(
        Learning(
            story=f"PD-{n % 40}",
            gate=n % 8 + 1,
            domain=f"d{n % 4}",
            project="p",
            tags=[f"#t{n}"],
            tags_hash=compute_tags_hash([f"#t{n}"]),
            text=f"Lesson {n}",
            date_created=today - timedelta(days=n % 90),
        )
        for n in range(learnings)
    )
    now = timezone.now()
    LearningInjection.objects.bulk_create(
        LearningInjection(learning=row, story=f"PD-{n % 7}", domain="d0", project="p", at=now - timedelta(days=n % 30))
        for n, row in enumerate(rows[: learnings // 2])
    )
    GateResult.objects.bulk_create(GateResult(story=f"PD-{n}", gate=8, verdict="GO", at=now) for n in range(7))
    scoring.compute_reuse_scores(full=True)
    scoring.compute_reuse_scores()
    lifecycle.propose_promotions(mode="review")
    lifecycle.evict()


def queries_for(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return len(queries)


@pytest.mark.django_db
def test_the_health_page_costs_the_same_queries_with_ten_or_three_hundred_learnings(
    as_viewer, django_assert_max_num_queries
):
    fill_memory(10)
    small = queries_for(as_viewer, reverse(OVERVIEW))
    fill_memory(300)
    assert PromotionProposal.objects.count() > 100

    with django_assert_max_num_queries(small):
        html = page(as_viewer, OVERVIEW)

    assert stat(html, "Learnings") == 310
    assert small <= 20


@pytest.mark.django_db
def test_the_detail_page_costs_the_same_queries_with_few_or_many_injections(as_viewer, reviewer):
    few, many = learning("PD-1"), learning("PD-2")
    inject(few, 1)
    inject(many, 200)
    scoring.compute_reuse_scores(full=True)
    lifecycle.propose_promotions(mode="review")
    for proposal in PromotionProposal.objects.filter(learning=many):
        reviews.decide(proposal.review_item_id, actor=Principal(user=reviewer), decision="approve")

    assert queries_for(as_viewer, reverse(DETAIL, args=[many.pk])) == queries_for(
        as_viewer, reverse(DETAIL, args=[few.pk])
    )


# Detail ----------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_detail_shows_text_tags_hash_scope_and_dates(as_viewer):
    item = learning(
        "PD-42",
        gate=5,
        tags=("Python", "#API"),
        text="Pin the client version.",
        domain="rag",
        date_created=date(2026, 10, 1),
    )

    html = page(as_viewer, DETAIL, item.pk)

    assert "Pin the client version." in html
    assert '<span class="tag">#api</span>' in html
    assert '<span class="tag">#python</span>' in html
    assert f"<code>{compute_tags_hash(['python', 'api'])}</code>" in html
    assert "Learned in PD-42 at gate 5, rag / shop." in html
    assert '<span class="scope scope-story">Story</span>' in html
    assert "<dt>Created</dt><dd>2026-10-01" in html
    assert "by system" in html


@pytest.mark.django_db
def test_the_detail_breaks_the_reuse_score_down(as_viewer):
    item = learning("PD-1")
    inject(item, 2, days_ago=2, story="PD-10", domain="seo")
    inject(item, 1, days_ago=2, story="PD-11", domain="rag")
    GateResultFactory(story="PD-10-0", gate=8, verdict="GO")
    scoring.compute_reuse_scores(full=True)

    html = page(as_viewer, DETAIL, item.pk)

    score = ReuseScore.objects.get()
    assert (score.nb_injections, score.nb_stories_gate8_go, score.nb_domains) == (3, 1, 2)
    assert score.reuse_score == Decimal("2.0000")
    rows = re.findall(r'<tr><td>([^<]+)</td><td class="num">(\d+)</td><td class="num">([\d.]+)</td>', html)
    assert rows == [
        ("Injections", "3", "0.4"),
        ("Stories with a gate-8 GO after an injection", "1", "0.4"),
        ("Domains injected into", "2", "0.2"),
    ]
    assert '<td class="num score-total">2.0000</td>' in html
    assert "Not scored" not in html


@pytest.mark.django_db
def test_a_learning_never_injected_reads_not_scored(as_viewer):
    html = page(as_viewer, DETAIL, learning().pk)

    assert "Not scored (0.0)" in html
    assert "Never injected into a step-0 block." in html


@pytest.mark.django_db
def test_the_detail_lists_the_last_fifty_injections_newest_first(as_viewer):
    item = learning()
    inject(item, 60, story="PD-OLD", days_ago=3)
    inject(item, 1, story="PD-NEW")

    html = page(as_viewer, DETAIL, item.pk)

    assert "61 in all; the last 50 shown, newest first." in html
    injected = re.findall(r"</td><td>(PD-[A-Z]+)-\d+</td><td>seo</td>", html)
    assert len(injected) == 50
    assert injected[0] == "PD-NEW"


@pytest.mark.django_db
def test_the_detail_tells_the_scope_history_with_proposals_and_who_decided(as_viewer, reviewer):
    item = learning()
    inject(item, 2)
    scoring.compute_reuse_scores(full=True)
    lifecycle.propose_promotions(mode="auto")  # story -> domain, by the system
    lifecycle.propose_promotions(mode="review")  # domain -> global, waits for a reviewer
    proposal = PromotionProposal.objects.get(status="proposed")
    reviews.decide(proposal.review_item_id, actor=Principal(user=reviewer), decision="approve")

    html = page(as_viewer, DETAIL, item.pk)

    assert html.count('<span class="moment-label">learning.promoted</span>') == 2
    assert "story → domain by system" in html
    assert "domain → global by user:rita" in html
    assert "<td>story → domain</td>" in html
    assert "<td>domain → global</td>" in html
    assert html.count('<span class="proposal proposal-applied">Applied</span>') == 2
    assert "<td>user:rita</td>" in html
    assert f"#review-item-{proposal.review_item_id}" in html
    assert '<span class="scope scope-global">Global</span>' in html


@pytest.mark.django_db
def test_the_detail_of_an_archived_learning_says_when_and_why(as_viewer):
    item = learning(date_created=timezone.localdate() - timedelta(days=80))
    lifecycle.evict()

    html = page(as_viewer, DETAIL, item.pk)

    assert "→ archived (stale) by system" in html
    assert '<span class="scope scope-archived">Archived</span>' in html
    assert "No promotion was ever proposed for this learning." in html


# Bulk approval of promotions in the inbox -------------------------------------------------------


@pytest.fixture
def proposals(db) -> list[PromotionProposal]:
    """Three story learnings, each proposed for domain in the inbox."""
    for n in range(3):
        inject(learning(f"PD-{n}"), 1)
    scoring.compute_reuse_scores(full=True)
    lifecycle.propose_promotions(mode="review")
    return list(PromotionProposal.objects.order_by("pk"))


@pytest.fixture
def other_item(db) -> ReviewItem:
    """An item of a kind decided one by one (an upstream tool's changed definition)."""
    return reviews.open_item(actor=SYSTEM, kind="gateway.tool_definition", title="Something else", payload={})


def selected(item: int | str) -> str:
    """A row's box as the page posts it: the item's id and the hash of what its row shows."""
    found = ReviewItem.objects.filter(pk=item).first() if str(item).isdigit() else None
    return f"{item}:{found.content_hash}" if found else str(item)


def approve(client: Client, *items: int | str, **extra: object):
    return client.post(reverse(BULK), {"items": [selected(item) for item in items], "decision": "approve"}, **extra)


def statuses() -> list[str]:
    return list(PromotionProposal.objects.order_by("pk").values_list("status", flat=True))


def test_a_reviewer_gets_a_checkbox_on_rows_decided_in_bulk_only(as_reviewer, proposals, other_item):
    html = page(as_reviewer, "reviews:inbox")

    boxes = re.findall(r'class="review-select" name="items" value="(\d+):([0-9a-f]{64})" form="bulk-selected"', html)
    assert sorted(int(pk) for pk, _ in boxes) == sorted(p.review_item_id for p in proposals)
    assert dict(boxes) == {
        str(p.review_item_id): ReviewItem.objects.get(pk=p.review_item_id).content_hash for p in proposals
    }
    assert f'action="{reverse(BULK)}"' in html
    assert 'aria-label="Approve selected"' in html


def test_a_viewer_gets_no_checkbox_and_no_bulk_form(as_viewer, proposals):
    html = page(as_viewer, "reviews:inbox")

    assert 'name="items"' not in html
    assert reverse(BULK) not in html


def test_bulk_approve_applies_each_selected_promotion(as_reviewer, proposals):
    chosen = proposals[:2]

    response = approve(as_reviewer, *(p.review_item_id for p in chosen))

    assert response.status_code == 302
    assert response["Location"] == reverse("reviews:inbox")
    assert statuses() == ["applied", "applied", "proposed"]
    for proposal in chosen:
        proposal.refresh_from_db()
        assert proposal.decided_by == "user:rita"
        assert proposal.learning.scope == "domain"
        assert proposal.review_item.status == "approved"
        assert proposal.review_item.decision.user.username == "rita"
    html = page(as_reviewer, "reviews:inbox")
    assert "Approved 2 items." in html


def test_bulk_approve_skips_items_already_decided(as_reviewer, admin_operator, proposals):
    first, second, _ = proposals
    reviews.decide(first.review_item_id, actor=Principal(user=admin_operator), decision="reject")

    response = approve(as_reviewer, first.review_item_id, second.review_item_id, follow=True)

    assert statuses() == ["rejected", "applied", "proposed"]
    first.review_item.refresh_from_db()
    assert first.review_item.decision.decided_by == "user:alice"
    html = unescape(response.content.decode())
    assert "Approved 1 item." in html
    assert "Skipped 1 item: decided meanwhile, past their deadline or changed since shown." in html


def test_bulk_approve_never_approves_kinds_decided_one_by_one(as_reviewer, proposals, other_item):
    response = approve(as_reviewer, other_item.pk, "not-a-number", follow=True)

    other_item.refresh_from_db()
    assert other_item.status == "pending"
    assert statuses() == ["proposed"] * 3
    assert "Skipped 1 item: not decided this way" in unescape(response.content.decode())


def test_bulk_approve_with_nothing_selected_says_so(as_reviewer, proposals):
    response = approve(as_reviewer, follow=True)

    assert "Select the items to decide first." in unescape(response.content.decode())
    assert statuses() == ["proposed"] * 3


@pytest.mark.parametrize("who", ["viewer", "outsider"])
def test_bulk_approve_needs_the_reviewer_permission(client, proposals, who, request):
    client.force_login(request.getfixturevalue(who))

    assert approve(client, *(p.review_item_id for p in proposals)).status_code == 403
    assert statuses() == ["proposed"] * 3


def test_bulk_approve_sends_anonymous_visitors_to_the_login(client, proposals):
    response = approve(client, proposals[0].review_item_id)

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))
    assert statuses() == ["proposed"] * 3


def test_bulk_approve_needs_a_post(as_reviewer, proposals):
    assert as_reviewer.get(reverse(BULK), {"items": proposals[0].review_item_id}).status_code == 405
    assert statuses() == ["proposed"] * 3


def test_bulk_approve_without_the_csrf_token_is_refused(reviewer, proposals):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(reviewer)

    assert approve(browser, proposals[0].review_item_id).status_code == 403
    assert statuses() == ["proposed"] * 3

    token = str(browser.get(reverse("reviews:inbox")).context["csrf_token"])
    form = {"items": [selected(proposals[0].review_item_id)], "decision": "approve", "csrfmiddlewaretoken": token}
    accepted = browser.post(reverse(BULK), form)
    assert accepted.status_code == 302
    assert statuses() == ["applied", "proposed", "proposed"]


@pytest.mark.django_db
def test_the_health_page_lists_watch_note_tags_linking_to_the_notes_carrying_them(as_viewer, admin_client):
    note = (
        "---\ntitle: {title}\ndate: 2026-11-01\nverdict_veille: signal\nimpact_pv: fort\ntags: {tags}\n---\n\nBody.\n"
    )
    watch_notes.add_note(note.format(title="pgvector 0.8", tags="[postgres, vectors]"), "a.md", actor=SYSTEM)
    watch_notes.add_note(note.format(title="PG 18", tags="[postgres]"), "b.md", actor=SYSTEM)

    html = page(as_viewer, OVERVIEW)
    filtered = admin_client.get("/admin/memory/veillenote/", {"tag": "vectors"}).content.decode()

    assert '?tag=postgres">postgres (2)</a>' in html
    assert '?tag=vectors">vectors (1)</a>' in html
    assert "pgvector 0.8" in filtered
    assert "PG 18" not in filtered
