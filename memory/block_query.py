"""The injection block's reads and its ledger write in one round trip to PostgreSQL.

Every agent asks for the block at every story start, so its database work is on the hot path. Done
section by section it took a transaction each, a separate `SET LOCAL`, and a second query to turn hit
ids into rows: about sixteen round trips. Here it is one multi-statement query string, which
PostgreSQL runs as one implicit transaction: the learnings (with their injections recorded by a
data-modifying CTE, under the scoring inputs' shared lock), the watch notes and the clarifications,
each returning the columns the block shows. Each search is preceded by its own `ef_search`, the one
`tune_search` calibrated for its kind: a larger one for both would only slow the other (at 100 000
learnings, 40 instead of 80 is a quarter of the index scan). Rows stay tuples: no model
instance is built.

One statement fails as a whole, so memory/injection.py falls back to its section-by-section path
when this raises: a failing source then still degrades its own section only.
"""

from __future__ import annotations

import json
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connection, transaction

from memory import clarifications, scoring, search
from memory.reach import Reach

LEARNING_COLUMNS = ", l.story, l.gate, l.domain, l.scope, l.tags::text, l.text"
VEILLE_COLUMNS = ", v.title, v.date, v.impact_pv, v.verdict_veille, v.summary, v.tags::text"
# The hits' order, as learnings_sql sorts them (a CTE's rows come back in no promised order).
HITS_ORDER = "similarity DESC, score DESC, date_created DESC NULLS LAST, id DESC"
# ... and as story_learnings_sql sorts them, without a query vector.
STORY_HITS_ORDER = "(story = %(l_story)s) DESC, score DESC, date_created DESC NULLS LAST, id DESC"
# Learnings are served with a lock that a scoring run's exclusive one waits for (memory/scoring.py).
LEDGER = """
    , ledger AS (
        INSERT INTO memory_learninginjection (learning_id, story, domain, project, at, served_to, similarity)
        SELECT hits.id, %(story)s, %(domain)s, %(project)s, %(at)s, %(served_to)s, hits.similarity
          FROM hits, (SELECT pg_advisory_xact_lock_shared(hashtext(%(inputs_lock)s))) AS held
    )
"""


@dataclass
class Rows:
    """What the one query returned, by section; a section left out of the query stays None."""

    learnings: list[dict[str, Any]] | None = None
    veille: list[dict[str, Any]] | None = None
    clarifications: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Ledger:
    """Who the learnings are served to, recorded as one injection per learning."""

    story: str
    domain: str
    project: str
    served_to: str
    at: datetime


def fetch(
    *,
    vector: tuple[list[float], str, int] | None,
    reach: Reach | None,
    domain: str,
    project: str,
    limits: dict[str, int],
    impacts: tuple[str, ...],
    ledger: Ledger | None,
    story: str = "",
    without_query: bool = False,
) -> Rows:
    """Run the block's statements in one round trip. ``vector`` (the query's, its model and dimension)
    is None when the embedding failed: only clarifications are read then. ``without_query``: there
    was nothing to embed, the learnings are ``story``'s and ``domain``'s and the watch notes the
    newest (memory/search.py ``story_learnings_sql``). ``reach`` is None when the caller may not
    read learnings. ``ledger`` None reads without recording (a preview)."""
    statements: list[str] = []
    params: dict[str, Any] = {}
    if without_query:
        if reach is not None:
            params |= search.story_learnings_params(
                story=story, domain=domain, k=limits["learnings"], reach=reach, p="l_"
            )
            learnings = search.story_learnings_sql(p="l_", columns=LEARNING_COLUMNS)
            statements.append(_recorded(learnings, STORY_HITS_ORDER, ledger, params))
        params |= {"v_impacts": list(impacts) if impacts else None, "v_k": limits["veille"]}
        statements.append(search.latest_veille_sql(p="v_", columns=VEILLE_COLUMNS))
    elif vector is not None:
        values, model, dimension = vector
        q = search.vector_literal(values)
        if reach is not None:
            params |= search.learnings_params(
                q, model=model, k=limits["learnings"], domain=None, project=None, reach=reach, p="l_"
            )
            learnings = search.learnings_sql(dimension, p="l_", columns=LEARNING_COLUMNS)
            statements.append(search.ef_search(params["l_candidates"]))
            statements.extend(search.walk_settings())
            statements.append(_recorded(learnings, HITS_ORDER, ledger, params))
        params |= search.veille_params(q, model=model, k=limits["veille"], impacts=impacts, p="v_")
        statements.append(search.ef_search(params["v_candidates"]))
        statements.append(search.veille_sql(dimension, p="v_", columns=VEILLE_COLUMNS))
    statements.append(clarifications.LATEST_SQL)
    params |= {"c_domain": domain, "c_project": project, "c_limit": limits["clarifications"]}

    # Alone, the string is its own transaction; inside the caller's, a savepoint keeps a failure here
    # from aborting it.
    isolated = transaction.atomic() if connection.in_atomic_block else nullcontext()
    with isolated, connection.cursor() as cursor:
        cursor.execute(";\n".join(statements), params)
        results = []
        while True:
            if cursor.description is not None:
                results.append(cursor.fetchall())
            if not cursor.nextset():
                break
    rows = Rows(clarifications=[_clarification(row) for row in results.pop()])
    if vector is not None or without_query:
        rows.veille = [_note(row) for row in results.pop()]
        if reach is not None:
            rows.learnings = [_learning(row) for row in results.pop()]
    return rows


def _recorded(learnings: str, order: str, ledger: Ledger | None, params: dict[str, Any]) -> str:
    """The learnings statement, with its hits recorded as injections unless ``ledger`` is None (a
    preview); adds the ledger's parameters to ``params``."""
    if ledger is None:
        return learnings
    params |= {
        "story": ledger.story,
        "domain": ledger.domain,
        "project": ledger.project,
        "served_to": ledger.served_to,
        "at": ledger.at,
        "inputs_lock": scoring.INPUTS_LOCK,
    }
    return f"WITH hits AS ({learnings}) {LEDGER} SELECT * FROM hits ORDER BY {order}"


def _learning(row: tuple) -> dict[str, Any]:
    pk, similarity, score, _created, story, gate, domain, scope, tags, text = row
    return {
        "id": pk,
        "story": story,
        "gate": gate,
        "domain": domain,
        "scope": scope,
        "tags": json.loads(tags),
        "text": text,
        "similarity": round(similarity, 4),
        "reuse_score": float(score),
    }


def _note(row: tuple) -> dict[str, Any]:
    pk, similarity, title, date, impact, verdict, summary, tags = row
    return {
        "id": pk,
        "title": title,
        "date": date.isoformat(),
        "impact_pv": impact,
        "verdict_veille": verdict,
        "summary": summary,
        "tags": json.loads(tags),
        "similarity": round(similarity, 4),
    }


def _clarification(row: tuple) -> dict[str, Any]:
    story, version, name, date, answers = row
    return {"story": story, "version": version, "name": name, "answers": answers, "date": date.isoformat()}
