"""Demo contracts: the shipped catalog, then two weeks of audited LLM outputs of the demo agents.

The outputs are synthetic but break their contracts the way real models do: numeric ids sent as
strings to ``memory_retrieval_ranking``, a confidence written as a percentage, lists serialised
into strings, statuses outside their enum, required fields left out. Every output goes through
``contracts.check`` (as ``audit_llm_log`` would send it, with the time of the call), so the
audit records and the daily aggregates the reports read are the real ones. The indexer's
string-id habit was fixed in its prompt five days ago, so its compliance chart climbs.

Safe to run again: no check is added when the demo agents already have some. A fixed seed makes
every load tell the same story.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from typing import TYPE_CHECKING, Any, TextIO

from django.utils import timezone

from governance.contracts import services as contracts
from governance.contracts.models import Contract, ContractCheck, checked
from governance.kernel.principals import SYSTEM

if TYPE_CHECKING:
    from agents.models import Agent

SEED = 0
DAYS = 14
CHECKS_PER_DAY = (190, 240)
FIXED_DAYS_AGO = 5  # faults marked ``fixed`` become rare from this day on
FIXED_SHARE = 0.15  # what remains of a fixed fault's rate
VLEVEL, INDEXER, ARCHITECT = "agent.seo.vlevel", "agent.rag.indexer", "agent.seo.architect"
DEMO_AGENTS = (VLEVEL, INDEXER, ARCHITECT)

Output = dict[str, Any]


@dataclass(frozen=True)
class Fault:
    """One way a model breaks the contract: how often, and what it does to a good output."""

    rate: float
    breaks: Callable[[Output, random.Random], None]
    fixed: bool = False


@dataclass(frozen=True)
class Pattern:
    """Outputs of one agent for one contract: a good answer, and the faults that creep in."""

    contract: str
    agent_id: str
    weight: int
    good: Callable[[random.Random], tuple[Output, frozenset[str] | None]]
    faults: tuple[Fault, ...]


# --- Good answers --------------------------------------------------------------------------------

PAGES = ("home", "category/shoes", "product/4411", "blog/sizing-guide", "checkout", "faq")
LABELS = ("SEO_AUDIT", "CONTENT_REVIEW", "REINDEX", "QUESTION", "BUG_REPORT")


def _ranking(rng: random.Random) -> tuple[Output, frozenset[str]]:
    candidates = rng.sample(range(100, 999), k=rng.randint(3, 6))
    rankings = [
        {"id": cid, "adjusted_score": round(rng.random(), 3), "rationale": "matches the query's entity", "rank": n}
        for n, cid in enumerate(candidates, start=1)
    ]
    return {"rankings": rankings}, frozenset(str(cid) for cid in candidates)


def _intent(rng: random.Random) -> tuple[Output, None]:
    intent = {"label": rng.choice(LABELS), "confidence": round(rng.uniform(0.55, 0.98), 2), "rationale": "keywords"}
    output = {"intent": intent, "tone": "neutral", "summary": f"Audit of /{rng.choice(PAGES)}"}
    output["follow_up_questions"] = ["Which locale?", "Mobile too?"][: rng.randint(0, 2)]
    return output, None


def _answer(rng: random.Random) -> tuple[Output, None]:
    citations = [
        {"doc_id": f"doc-{rng.randint(1, 400)}", "extrait": "…", "confiance": round(rng.random(), 2)}
        for _ in range(rng.randint(1, 3))
    ]
    return {"status": "ok", "answer": "Returns are free within 30 days.", "citations": citations, "notes": []}, None


def _goal(rng: random.Random) -> tuple[Output, None]:
    actions = [
        {"action": rng.choice(("crawl_page", "check_canonical", "open_issue")), "rationale": "from the goal"}
        for _ in range(rng.randint(1, 3))
    ]
    return {"candidate_actions": actions, "normalized_goal": "fix duplicate canonicals"}, None


def _questions(rng: random.Random) -> tuple[Output, None]:
    texts = ("Which pages are in scope?", "Is the blog included?", "Who approves redirects?")
    return {"questions": [{"text": text} for text in rng.sample(texts, k=rng.randint(1, 3))]}, None


def _tactic(rng: random.Random) -> tuple[Output, None]:
    meta = {"utility": round(rng.uniform(0.3, 0.9), 2), "risk": round(rng.uniform(0, 0.4), 2), "rationale": "calm"}
    return {"selected_rule": {"id": f"rule-{rng.randint(1, 40)}", "tactic": {"name": "reassure"}}, "meta": meta}, None


# --- Faults --------------------------------------------------------------------------------------


def _ids_as_strings(output: Output, rng: random.Random) -> None:
    for item in output["rankings"]:
        item["id"] = str(item["id"])


def _score_as_string(output: Output, rng: random.Random) -> None:
    item = rng.choice(output["rankings"])
    item["adjusted_score"] = str(item["adjusted_score"])


def _no_score(output: Output, rng: random.Random) -> None:
    del rng.choice(output["rankings"])["adjusted_score"]


def _rankings_as_text(output: Output, rng: random.Random) -> None:
    output["rankings"] = json.dumps(output["rankings"])


def _confidence_as_percent(output: Output, rng: random.Random) -> None:
    output["intent"]["confidence"] = round(output["intent"]["confidence"] * 100)


def _no_confidence(output: Output, rng: random.Random) -> None:
    del output["intent"]["confidence"]


def _empty_label(output: Output, rng: random.Random) -> None:
    output["intent"]["label"] = ""


def _questions_as_text(output: Output, rng: random.Random) -> None:
    output["follow_up_questions"] = "Which locale? Mobile too?"


def _status_success(output: Output, rng: random.Random) -> None:
    output["status"] = "success"


def _citations_as_text(output: Output, rng: random.Random) -> None:
    output["citations"] = ", ".join(c["doc_id"] for c in output["citations"])


def _no_status(output: Output, rng: random.Random) -> None:
    del output["status"]


def _type_instead_of_action(output: Output, rng: random.Random) -> None:
    item = rng.choice(output["candidate_actions"])
    item["type"] = item.pop("action")


def _empty_question(output: Output, rng: random.Random) -> None:
    output["questions"][0]["text"] = ""


def _questions_as_strings(output: Output, rng: random.Random) -> None:
    output["questions"] = json.dumps([q["text"] for q in output["questions"]])


def _utility_out_of_range(output: Output, rng: random.Random) -> None:
    output["meta"]["utility"] = round(rng.uniform(1.1, 3), 2)


def _no_selected_rule(output: Output, rng: random.Random) -> None:
    del output["selected_rule"]


PATTERNS = (
    Pattern(
        "memory_retrieval_ranking",
        INDEXER,
        6,
        _ranking,
        (
            Fault(0.35, _ids_as_strings, fixed=True),
            Fault(0.04, _score_as_string),
            Fault(0.03, _no_score),
            Fault(0.03, _rankings_as_text),
        ),
    ),
    Pattern("memory_retrieval_ranking", VLEVEL, 1, _ranking, (Fault(0.05, _ids_as_strings),)),
    Pattern(
        "intent_ingestion",
        VLEVEL,
        5,
        _intent,
        (
            Fault(0.12, _confidence_as_percent),
            Fault(0.04, _no_confidence),
            Fault(0.02, _empty_label),
            Fault(0.06, _questions_as_text),
        ),
    ),
    Pattern(
        "retrieval_answer",
        INDEXER,
        4,
        _answer,
        (
            Fault(0.07, _status_success),
            Fault(0.05, _citations_as_text),
            Fault(0.02, _no_status),
        ),
    ),
    Pattern("goal_interpreter", ARCHITECT, 3, _goal, (Fault(0.06, _type_instead_of_action),)),
    Pattern(
        "question_manager",
        ARCHITECT,
        2,
        _questions,
        (
            Fault(0.03, _empty_question),
            Fault(0.05, _questions_as_strings),
        ),
    ),
    Pattern(
        "social_tactic_selector",
        VLEVEL,
        1,
        _tactic,
        (
            Fault(0.10, _utility_out_of_range),
            Fault(0.03, _no_selected_rule),
        ),
    ),
)


def _output(pattern: Pattern, rng: random.Random, days_ago: int) -> tuple[Output, frozenset[str] | None]:
    output, known = pattern.good(rng)
    output = copy.deepcopy(output)
    for fault in pattern.faults:
        rate = fault.rate * (FIXED_SHARE if fault.fixed and days_ago < FIXED_DAYS_AGO else 1)
        if rng.random() < rate:
            fault.breaks(output, rng)
    return output, known


def _submissions(agents: dict[str, Agent], catalog: dict[str, Contract], rng: random.Random) -> list:
    """Every demo output, with the time of its call spread over each day (never in the future)."""
    now, today = timezone.now(), timezone.localdate()
    patterns = [p for p in PATTERNS if p.agent_id in agents and p.contract in catalog]
    weights = [p.weight for p in patterns]
    submissions = []
    for days_ago in range(DAYS - 1, -1, -1):
        start = timezone.make_aware(datetime.combine(today - timedelta(days=days_ago), time.min))
        span = min(86_400.0, (now - start).total_seconds())
        for pattern in rng.choices(patterns, weights, k=rng.randint(*CHECKS_PER_DAY)):
            output, known = _output(pattern, rng, days_ago)
            at = start + timedelta(seconds=rng.uniform(0, span))
            submissions.append(
                contracts.Submission(
                    catalog[pattern.contract], output, known_ids=known, agent=agents[pattern.agent_id], at=at
                )
            )
    return submissions


def load(out: TextIO) -> None:
    report = contracts.import_catalog(contracts.CATALOG.read_text(encoding="utf-8"), actor=SYSTEM)
    out.write(
        f"Demo contracts: {report.total} in the catalog ({len(report.created)} created, "
        f"{len(report.changed)} changed, {len(report.unchanged)} unchanged)\n"
    )
    agents = {agent.agent_id: agent for agent in checked("agent")._default_manager.filter(agent_id__in=DEMO_AGENTS)}
    if not agents:
        out.write("Demo contract checks skipped: the demo agents do not exist.\n")
        return
    if ContractCheck.objects.filter(agent__in=agents.values()).exists():
        return
    names = {p.contract for p in PATTERNS}
    catalog = {c.name: c for c in Contract.objects.filter(name__in=names, is_current=True)}
    checks = contracts.check(
        _submissions(agents, catalog, random.Random(SEED)), principal=SYSTEM, source=ContractCheck.Source.LOG
    )
    compliant = sum(check.compliant for check in checks)
    out.write(
        f"Demo contract checks: {len(checks)} LLM outputs of {len(agents)} agents over {DAYS} days, "
        f"{compliant / len(checks):.1%} compliant\n"
    )
