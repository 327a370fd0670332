"""Demo memory: a few hundred learnings of four domains, a month of injections and gate results,
watch notes, clarifications, then the real scoring and lifecycle runs over them.

Learnings, notes and clarifications go through their services (canonical tags hash, audit rows,
embeddings scheduled after commit). Injections and gate results are written directly with past
timestamps: they stand for step-0 blocks and gates that ran before the demo existed, as the fleet
demo writes its KPI history. Scoring and the lifecycle then run for real, in three rounds, so the
memory shows every state: a first cohort of learnings promoted to global, a second one promoted to
domain and now proposed for global, a third one proposed for domain (the proposals of the last two
wait in the reviewer inbox), and old learnings never injected archived as stale.

The memory also gets one subject, "alice": seed 002's example documents (memory/subjects/fixtures/alice),
imported through ``subjects.import_documents`` as an assistant's export would be. Its memories come
without vectors, so the import schedules them for the worker like any new memory: the subject's
pages read rows, not vectors, and show everything at once; only semantic search waits for the
worker (as for the learnings above).

Safe to run again: nothing is created when learnings already exist. Texts are generated from
templates with a fixed seed, so every load tells the same story. Alice comes with the first load
only, and not over a subject of that key imported before: an import replaces each document (it
never duplicates rows), but it also writes an audit row, deletes the subject's vectors and
schedules them again, so importing twice would not be a no-op, and an operator's own "alice" is
theirs.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import TextIO

import yaml
from django.utils import timezone
from django.utils.text import slugify

from agents import registries
from agents.jobs import leases
from agents.models import Agent, Job
from agents.vocabulary import Registry
from governance.kernel.principals import SYSTEM, Principal
from memory import clarifications, lifecycle, scoring, watch_notes
from memory.learnings import create_learning
from memory.models import GateResult, Learning, LearningInjection, PromotionProposal, Subject
from memory.subjects import documents as subject_documents
from memory.subjects import services as subjects

SEED = 295
SUBJECT = "alice"
SUBJECT_DOCUMENTS = Path(__file__).resolve().parent / "subjects" / "fixtures" / "alice"
LEARNINGS = 300
WINDOW_DAYS = 30
STALE_SHARE = 0.25  # learnings older than the eviction age; those never injected get archived
OLDEST_DAYS = 120
COHORTS = {"global": 40, "domain": 12, "story": 12}  # injected learnings, by the scope they end in
INJECTIONS_PER_LEARNING = (1, 1, 1, 2, 2, 3, 4, 6, 9)
GO_SHARE = 0.6  # stories that pass gate 8 after receiving learnings


@dataclass(frozen=True)
class Lesson:
    subject: str
    problem: str
    fix: str
    tag: str


@dataclass(frozen=True)
class Domain:
    name: str
    first_story: int
    projects: tuple[str, ...]
    tags: tuple[str, ...]
    agent_id: str | None
    lessons: tuple[Lesson, ...]


DOMAINS = (
    Domain(
        "seo",
        201,
        ("shop-front", "blog"),
        ("#seo", "#content", "#crawl"),
        "agent.seo.vlevel",
        (
            Lesson(
                "canonical URLs",
                "paginated pages pointed to themselves and split the ranking",
                "set the canonical of a series to its first page",
                "#canonical",
            ),
            Lesson(
                "the sitemap index",
                "redirected URLs stayed listed for weeks",
                "regenerate the sitemap after every redirect batch",
                "#sitemap",
            ),
            Lesson(
                "hreflang tags",
                "missing return links made the whole locale set ignored",
                "emit hreflang pairs from one table for every locale",
                "#hreflang",
            ),
            Lesson(
                "meta descriptions",
                "one template produced the same description on 400 pages",
                "derive descriptions from the product attributes",
                "#meta",
            ),
            Lesson(
                "structured data",
                "prices typed as strings failed validation",
                "validate the JSON-LD against its schema in CI",
                "#structured-data",
            ),
            Lesson(
                "faceted navigation",
                "filter combinations produced millions of crawlable URLs",
                "keep facet combinations out of the crawl with robots rules",
                "#facets",
            ),
        ),
    ),
    Domain(
        "rag",
        221,
        ("catalog-search", "support-bot"),
        ("#rag", "#retrieval", "#embeddings"),
        "agent.rag.indexer",
        (
            Lesson(
                "chunk sizes",
                "answers quoted half of a table",
                "split on headings before splitting on length",
                "#chunking",
            ),
            Lesson(
                "the embedding model",
                "a silent model upgrade mixed two vector spaces",
                "store the model name with every vector",
                "#models",
            ),
            Lesson(
                "reranking",
                "the top hit was a near-duplicate of the question",
                "drop near-duplicates before reranking",
                "#reranking",
            ),
            Lesson(
                "the HNSW index",
                "recall dropped after a bulk import",
                "rebuild the index after large imports",
                "#pgvector",
            ),
            Lesson(
                "document metadata",
                "date filters matched nothing because dates were strings",
                "normalise metadata when indexing, not when querying",
                "#metadata",
            ),
        ),
    ),
    Domain(
        "checkout",
        241,
        ("shop-front", "payments"),
        ("#checkout", "#payments"),
        None,  # no agent of the fleet writes into checkout (memory/provenance.py): its lessons are the team's
        (
            Lesson(
                "payment webhooks",
                "a duplicate delivery charged a customer twice",
                "key every webhook by its event id",
                "#webhooks",
            ),
            Lesson("VAT rounding", "totals differed from the invoice by one cent", "round per line, then sum", "#vat"),
            Lesson(
                "the capture retries",
                "a timeout retried a capture that had succeeded",
                "make captures idempotent before adding retries",
                "#idempotency",
            ),
            Lesson(
                "address validation",
                "valid overseas addresses were refused",
                "warn instead of blocking on unknown address formats",
                "#addresses",
            ),
        ),
    ),
    Domain(
        "platform",
        261,
        ("control-plane", "ci"),
        ("#platform", "#ops"),
        None,
        (
            Lesson(
                "database migrations",
                "renaming a column locked the table for minutes",
                "add the new column, backfill, then switch reads",
                "#migrations",
            ),
            Lesson(
                "Celery retries",
                "a task retried a validation error forever",
                "retry only on named transient errors, with backoff",
                "#celery",
            ),
            Lesson(
                "test fixtures",
                "the suite passed on SQLite and failed on PostgreSQL",
                "run the tests on the production database engine",
                "#postgres",
            ),
            Lesson(
                "log formatting",
                "debug logs leaked API tokens",
                "redact secrets in the log formatter",
                "#observability",
            ),
        ),
    ),
)
STORIES_PER_DOMAIN = 10

TEMPLATES = (
    "Check {subject} before closing gate {gate}: {problem}.",
    "When {subject} changes, {fix}; otherwise {problem}.",
    "{Fix} before touching {subject} again: {problem}, and gate {gate} had to be rerun.",
    "Do not trust {subject} blindly: {problem}. {Fix}.",
    "Gate {gate} review: {problem}. The lasting fix was to {fix}.",
    "On {project}, {problem}; {fix} and say so in the story's definition of done.",
)

NOTES = (
    (
        "pgvector 0.8 adds iterative index scans",
        6,
        "signal",
        "fort",
        ["pgvector", "rag"],
        "Filtered vector searches no longer return too few rows: the index is scanned again until the "
        "limit is met. Worth enabling for the catalog search, where filters are strict.",
    ),
    (
        "FAQ rich results shown for fewer sites",
        12,
        "signal",
        "modere",
        ["seo", "structured-data"],
        "FAQ markup now earns rich results only on a few authoritative sites. Keep the markup, but stop "
        "counting on it in SEO estimates.",
    ),
    (
        "E-invoicing timeline for EU sellers",
        20,
        "veille",
        "modere",
        ["vat", "checkout"],
        "Mandatory structured e-invoices arrive in stages over the next years; the invoice model must "
        "carry line-level VAT data.",
    ),
    (
        "Celery 5.5: quorum queues on RabbitMQ",
        26,
        "veille",
        "faible",
        ["celery", "platform"],
        "Quorum queues are supported; nothing changes for a Redis broker.",
    ),
    (
        "Another leaderboard of coding models",
        3,
        "bruit",
        "aucun",
        ["llm"],
        "A new ranking with a private test set; no method published, nothing to act on.",
    ),
)

CLARIFICATIONS = (
    (
        "PD-204",
        "seo",
        "shop-front",
        9,
        (
            "Only product and category pages; the blog stays out of scope.",
            "Paginated categories point their canonical to page 1.",
            "Done when Search Console reports no duplicate-canonical warning for a week.",
            "No new redirects this quarter: keep the existing URLs.",
        ),
    ),
    (
        "PD-223",
        "rag",
        "catalog-search",
        15,
        (
            "The catalog only, not the support articles.",
            "Answers must cite the product sheet they come from.",
            "Recall@5 of at least 0.8 on the 200 reference questions.",
            "Reindex at night; the day index must stay available.",
        ),
    ),
    (
        "PD-223",
        "rag",
        "catalog-search",
        4,
        (
            "The catalog and, since this week, the support articles about returns.",
            "Answers must cite the product sheet or the article they come from.",
            "Recall@5 of at least 0.8 on the 240 reference questions (40 added for returns).",
            "Reindex at night; the day index must stay available.",
        ),
    ),
    (
        "PD-245",
        "checkout",
        "payments",
        7,
        (
            "Card and bank transfer; wallets come later.",
            "A webhook delivered twice must never charge twice.",
            "Zero duplicate charges over the replay of last month's webhook log.",
            "The payment provider's sandbox only; no production keys in CI.",
        ),
    ),
)


@dataclass
class Planned:
    """A learning to create, and the injections it will receive (``(at, story)`` pairs)."""

    domain: Domain
    story: str
    project: str
    gate: int
    tags: list[str]
    text: str
    created: date
    injections: list[tuple[datetime, str]]


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def _stories() -> dict[str, tuple[Domain, str]]:
    """Story id -> (domain, project): ten stories per domain, projects in turn."""
    return {
        f"PD-{domain.first_story + n}": (domain, domain.projects[n % len(domain.projects)])
        for domain in DOMAINS
        for n in range(STORIES_PER_DOMAIN)
    }


def _plan(rng: random.Random, today: date, now: datetime) -> list[Planned]:
    stories = _stories()
    by_domain = {domain.name: [s for s, (d, _) in stories.items() if d is domain] for domain in DOMAINS}
    planned = []
    for _ in range(LEARNINGS):
        story = rng.choice(list(stories))
        domain, project = stories[story]
        lesson = rng.choice(domain.lessons)
        gate = rng.randint(1, 8)
        values = {"subject": lesson.subject, "problem": lesson.problem, "fix": lesson.fix, "gate": gate}
        text = rng.choice(TEMPLATES).format(Fix=_capitalised(lesson.fix), project=project, **values)
        tags = [domain.tags[0], lesson.tag, *rng.sample(domain.tags[1:], k=rng.randint(0, len(domain.tags) - 1))]
        stale = rng.random() < STALE_SHARE
        age = rng.randint(57, OLDEST_DAYS) if stale else rng.randint(0, 55)
        planned.append(Planned(domain, story, project, gate, tags, text, today - timedelta(days=age), []))
    injected = rng.sample(planned, k=sum(COHORTS.values()))
    for item in injected:
        age = (today - item.created).days
        for _ in range(rng.choice(INJECTIONS_PER_LEARNING)):
            same_domain = rng.random() < 0.8
            pool = by_domain[item.domain.name] if same_domain else list(stories)
            into = rng.choice([s for s in pool if s != item.story])
            days_ago = rng.randint(0, min(age, WINDOW_DAYS - 1))
            at = now - timedelta(days=days_ago, minutes=rng.randint(1, 600))
            if timezone.localdate(at) < item.created:  # never before the learning existed
                at = now - timedelta(days=days_ago)
            item.injections.append((at, into))
    return injected + [item for item in planned if not item.injections]


def _gate_results(rng: random.Random, injected: list[Planned], now: datetime) -> list[GateResult]:
    """Gate 8 after the first injection for most receiving stories (GO, or NO_GO then GO),
    and earlier gates scattered over the month."""
    first_injection: dict[str, datetime] = {}
    for item in injected:
        for at, story in item.injections:
            first_injection[story] = min(at, first_injection.get(story, at))
    results = []
    for story, first in sorted(first_injection.items()):
        for gate in range(1, 8):
            results.append(GateResult(story=story, gate=gate, verdict="GO", at=first - timedelta(hours=8 - gate)))
        span = (now - first).total_seconds()
        if rng.random() < GO_SHARE:
            results.append(GateResult(story=story, gate=8, verdict="GO", at=first + timedelta(seconds=span * 0.7)))
        elif rng.random() < 0.5:
            results.append(GateResult(story=story, gate=8, verdict="NO_GO", at=first + timedelta(seconds=span * 0.5)))
    return results


def _note(title: str, day: date, verdict: str, impact: str, tags: list[str], summary: str) -> str:
    front = {"title": title, "date": day.isoformat(), "verdict_veille": verdict, "impact_pv": impact, "tags": tags}
    matter = yaml.safe_dump(front, sort_keys=False, allow_unicode=True)
    return f"---\n{matter}---\n\n# {title}\n\n## Résumé\n\n{summary}\n\n## Sources\n\nRelease notes and changelogs.\n"


def _authors() -> dict[str, Principal]:
    agent_ids = [domain.agent_id for domain in DOMAINS if domain.agent_id]
    agents = {agent.agent_id: agent for agent in Agent.objects.filter(agent_id__in=agent_ids)}
    return {
        domain.name: Principal(agent=agents[domain.agent_id]) if domain.agent_id in agents else SYSTEM
        for domain in DOMAINS
    }


def _inject(learnings: list[tuple[Learning, Planned]]) -> None:
    stories = _stories()
    scoring.hold_inputs()
    LearningInjection.objects.bulk_create(
        LearningInjection(
            learning=learning, story=story, domain=stories[story][0].name, project=stories[story][1], at=at
        )
        for learning, plan in learnings
        for at, story in plan.injections
    )


def _load_subject() -> str:
    """Import seed 002's Alice unless a subject of that key exists; say what was imported."""
    if Subject.objects.filter(key=SUBJECT).exists():
        return ""
    documents = {
        name: json.loads((SUBJECT_DOCUMENTS / f"{name}.json").read_text(encoding="utf-8"))
        for name in subject_documents.DOCUMENTS
    }
    counts = subjects.import_documents(SUBJECT, documents, actor=SYSTEM)
    return (
        f", subject {SUBJECT} ({counts['conversations']} conversations, {counts['facts']} facts, "
        f"{counts['embeddings']} memories)"
    )


def load(out: TextIO) -> None:
    if Learning.objects.exists():
        return
    rng = random.Random(SEED)
    now, today = timezone.now(), timezone.localdate()
    plans = _plan(rng, today, now)
    authors = _authors()
    for area in DOMAINS:  # checkout and platform are not among the seeds' domains: the demo adds them
        registries.add_value(Registry.DOMAINS, area.name, actor=SYSTEM)
    created = [
        (
            create_learning(
                actor=authors[plan.domain.name],
                story=plan.story,
                gate=plan.gate,
                domain=plan.domain.name,
                project=plan.project,
                tags=plan.tags,
                text=plan.text,
                date_created=plan.created,
            ),
            plan,
        )
        for plan in plans
    ]
    to_global, to_domain = COHORTS["global"], COHORTS["global"] + COHORTS["domain"]
    cohorts = (created[:to_global], created[to_global:to_domain], created[to_domain : sum(COHORTS.values())])
    scoring.hold_inputs()
    GateResult.objects.bulk_create(_gate_results(rng, [plan for _, plan in created if plan.injections], now))

    # Round 1: a first cohort earned two promotions (one step per run), applied at once.
    _inject(cohorts[0])
    scoring.compute_reuse_scores(full=True)
    lifecycle.propose_promotions(mode="auto")
    lifecycle.propose_promotions(mode="auto")
    # Round 2: a second cohort, promoted to domain; its next step will need a reviewer.
    _inject(cohorts[1])
    scoring.compute_reuse_scores()
    lifecycle.propose_promotions(mode="auto")
    # Round 3: a third cohort; from now on promotions wait for a reviewer.
    _inject(cohorts[2])
    scoring.compute_reuse_scores(full=True)
    lifecycle.propose_promotions(mode="review")
    archived = lifecycle.evict().archived

    for title, days_ago, verdict, impact, tags, summary in NOTES:
        text = _note(title, today - timedelta(days=days_ago), verdict, impact, tags, summary)
        watch_notes.add_note(text, f"demo/{slugify(title)}.md", actor=SYSTEM)
    for story, domain, project, days_ago, answers in CLARIFICATIONS:
        clarifications.persist_clarifications(
            story=story,
            domain=domain,
            project=project,
            answers=list(answers),
            actor=SYSTEM,
            now=now - timedelta(days=days_ago),
        )

    subject = _load_subject()
    served = _serve_cron_job()

    applied = PromotionProposal.objects.filter(status=PromotionProposal.Status.APPLIED).count()
    waiting = PromotionProposal.objects.filter(status=PromotionProposal.Status.PROPOSED).count()
    out.write(
        f"Demo memory: {len(created)} learnings in {len(DOMAINS)} domains, "
        f"{LearningInjection.objects.count()} injections over {WINDOW_DAYS} days, "
        f"{GateResult.objects.count()} gate results, {applied} promotions applied, {waiting} waiting for review, "
        f"{archived} archived as stale, {len(NOTES)} watch notes, {len(CLARIFICATIONS)} clarification versions"
        f"{subject}{served}\n"
    )


def _serve_cron_job() -> str:
    """The agents demo queued a cron-triggered job for story PD-204. Its worker takes it now that
    memory holds that story's clarification, so the job page shows what memory fed it
    (ragContext). Learnings join the blocks of later jobs once the worker has embedded them."""
    job = (
        Job.objects.filter(context__source="cron", status=Job.Status.QUEUED, rag_context__isnull=True)
        .select_related("agent")
        .first()
    )
    if job is None:
        return ""
    leases.claim_lease(job, actor=Principal(agent=job.agent), owner=f"{job.agent.agent_id}/demo-worker")
    return "; the cron-triggered job was leased and served its ragContext"
