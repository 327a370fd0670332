"""Reuse scores (seed 004 section 2.3, INV-295-05): computed in SQL, set-wise.

    reuse_score = 0.4 * injections + 0.4 * distinct stories with a gate-8 GO after the injection
                  + 0.2 * distinct domains injected into

where an injection counts once per story, and only when it was served close enough to the query
(``_COUNTED``, MEMORY_REUSE_SIMILARITY_FLOOR): the seed's injections were one per step-0 run, while
here any agent may call the block, so repeated calls from one story are one use, not many.

A raw weighted sum, not a ratio (M-01, H-01; TC-NOM-05 gives 1.8 and 1.0). Keyed by the
learning's (story, gate, tags_hash). Learnings never injected get no row; readers treat a missing
score as 0.0 (Écart 9).

An incremental run recomputes only the keys touched since the previous run (new injections, and
keys injected into stories that have since received a gate-8 GO), so its cost follows what
changed; `full=True` recomputes every key. Both write the same numbers, so what a full run finds
different is a correction: the weekly full run counts the keys whose stored numbers it changed,
the keys it created and the score rows of keys no longer injected at all (removed), keeps them on
its ScoringRun row and logs a warning naming them.

"Since the previous run" is an id watermark, and ids are handed out before commit: an injection
whose transaction commits after a run that already saw a higher id would be skipped by every
later incremental run. So the writers of injections and gate results hold a shared lock until
they commit (``hold_inputs``), and a run reads its watermark under the exclusive one: no write is
in flight below the watermark. Writers wait only for that one read, never for the run.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Max
from django.utils import timezone

from memory.models import GateResult, LearningInjection, ScoringRun

logger = logging.getLogger(__name__)

WEIGHT_INJECTIONS = Decimal("0.4")
WEIGHT_GATE8_GO = Decimal("0.4")
WEIGHT_DOMAINS = Decimal("0.2")
GO_GATE = 8


def compute_reuse_score(nb_injections: int, nb_gate8_go: int, nb_domains: int) -> Decimal:
    """The formula itself, for readers and tests; the SQL below applies the same constants."""
    return WEIGHT_INJECTIONS * nb_injections + WEIGHT_GATE8_GO * nb_gate8_go + WEIGHT_DOMAINS * nb_domains


# An injection carries its learning's key (memory/models/learnings.py): no run reads a learning.
_TOUCHED = """
    CREATE TEMPORARY TABLE scoring_touched ON COMMIT DROP AS
    SELECT learning_story AS story, learning_gate AS gate, learning_tags_hash AS tags_hash
      FROM memory_learninginjection
     WHERE id > %(last_injection)s
    UNION
    SELECT i.learning_story, i.learning_gate, i.learning_tags_hash
      FROM memory_gateresult g
      JOIN memory_learninginjection i ON i.story = g.story AND i.at < g.at
     WHERE g.id > %(last_gate)s AND g.gate = %(go_gate)s AND g.verdict = 'GO'
"""

# Without row counts the planner guessed one touched key where there were thousands and chose
# nested loops: after 100 new gate-8 GOs over 1M injections the run did not finish in 120 s.
_ANALYZE_TOUCHED = "ANALYZE scoring_touched"

# The hash joins of a full run (275 000 keys against the stored scores) spill to disk at the
# default 4 MB of work_mem; it is put back for whatever else the caller's transaction does.
_WORK_MEM = "SET LOCAL work_mem = '256MB'"
_RESTORE = ["RESET work_mem"]

# Which injections count (issue 34: one agent looping on the block must not make its own learning
# promotable): one per story, and only those served to a query at least MEMORY_REUSE_SIMILARITY_FLOOR
# close (an injection from before the similarity was kept, NULL, counts as it always did). The
# covering index carries the similarity, so a full run still reads the index alone.
_COUNTED = "(i.similarity IS NULL OR i.similarity >= %(floor)s)"

# What each key counts. Both shapes compute the same numbers; their plans differ.
#
# A full run reads every injection in key order from the covering index injection_score_key,
# whose columns end with the injected story, so the groups come out already sorted for
# count(DISTINCT story): no sort of a million rows (it was the floor at 1.6 s). Whether a GO
# follows an injection is the story's latest gate-8 GO (a partial index lookup, memoized per
# story), compared with the injection's time; a join would lose the index order.
_COUNT_ALL = """
        SELECT i.learning_story AS story, i.learning_gate AS gate, i.learning_tags_hash AS tags_hash,
               count(DISTINCT i.story) FILTER (WHERE {counted}) AS nb_injections,
               count(DISTINCT i.story) FILTER (WHERE {counted} AND g.at > i.at) AS nb_go,
               count(DISTINCT i.domain) FILTER (WHERE {counted}) AS nb_domains
          FROM memory_learninginjection i
          LEFT JOIN LATERAL (
              SELECT max(at) AS at FROM memory_gateresult
               WHERE story = i.story AND gate = %(go_gate)s AND verdict = 'GO'
          ) g ON true
         GROUP BY i.learning_story, i.learning_gate, i.learning_tags_hash
"""
# An incremental run reads the touched keys' injections (index lookups) in no useful order, so
# the stories' latest GOs are one hash join on a per-story aggregate, and the rows are sorted
# bytewise (COLLATE "C": equality is the same under any deterministic collation, and it skips
# the locale's strcoll).
_COUNT_TOUCHED = """
        SELECT i.learning_story COLLATE "C" AS story, i.learning_gate AS gate,
               i.learning_tags_hash COLLATE "C" AS tags_hash,
               count(DISTINCT i.story COLLATE "C") FILTER (WHERE {counted}) AS nb_injections,
               count(DISTINCT i.story COLLATE "C") FILTER (WHERE {counted} AND g.at > i.at) AS nb_go,
               count(DISTINCT i.domain COLLATE "C") FILTER (WHERE {counted}) AS nb_domains
          FROM scoring_touched t
          JOIN memory_learninginjection i
            ON i.learning_story = t.story AND i.learning_gate = t.gate AND i.learning_tags_hash = t.tags_hash
          LEFT JOIN (
              SELECT story, max(at) AS at FROM memory_gateresult
               WHERE gate = %(go_gate)s AND verdict = 'GO' GROUP BY story
          ) g ON g.story = i.story
         GROUP BY i.learning_story COLLATE "C", i.learning_gate, i.learning_tags_hash COLLATE "C"
"""

# Only the keys whose numbers changed are written (compared with the stored row, looked up in the
# database's collation so the key index serves it): a nightly full run over a million injections
# where little changed writes little, and what it writes is exactly what it corrects or creates.
# A new key is a plain INSERT and a changed one an UPDATE by the id just found (no ON CONFLICT: one
# scoring run writes at a time, _one_run_at_a_time), 10-15 % less than an upsert of each key.
# A full run also removes, in the same statement, the rows of keys nobody injects any more (their
# learnings were erased), which readers must see as 0.0. The statement answers with the number of
# keys computed, created, corrected and removed.
_RECOMPUTE = """
    WITH agg AS ({count}),
    scored AS (
        SELECT *, %(w_inj)s * nb_injections + %(w_go)s * nb_go + %(w_dom)s * nb_domains AS reuse_score FROM agg
    ),
    changed AS (
        SELECT a.*, s.id AS stored
          FROM scored a
          LEFT JOIN memory_reusescore s
            ON s.story = a.story COLLATE "default" AND s.gate = a.gate AND s.tags_hash = a.tags_hash COLLATE "default"
         WHERE s.id IS NULL
            OR (s.nb_injections, s.nb_stories_gate8_go, s.nb_domains, s.reuse_score)
               IS DISTINCT FROM (a.nb_injections, a.nb_go, a.nb_domains, a.reuse_score)
    ),
    created AS (
        INSERT INTO memory_reusescore
            (story, gate, tags_hash, nb_injections, nb_stories_gate8_go, nb_domains, reuse_score, computed_at)
        SELECT story, gate, tags_hash, nb_injections, nb_go, nb_domains, reuse_score, %(now)s
          FROM changed WHERE stored IS NULL
    ),
    corrected AS (
        UPDATE memory_reusescore s
           SET nb_injections = c.nb_injections, nb_stories_gate8_go = c.nb_go, nb_domains = c.nb_domains,
               reuse_score = c.reuse_score, computed_at = %(now)s
          FROM changed c
         WHERE s.id = c.stored
    ),
    {removed}
    SELECT (SELECT count(*) FROM agg),
           (SELECT count(*) FILTER (WHERE stored IS NULL) FROM changed),
           (SELECT count(*) FILTER (WHERE stored IS NOT NULL) FROM changed),
           (SELECT count(*) FROM removed)
"""

_REMOVED = """removed AS (
        DELETE FROM memory_reusescore s
         WHERE NOT EXISTS (
            SELECT 1 FROM agg a
             WHERE a.story COLLATE "default" = s.story AND a.gate = s.gate
               AND a.tags_hash COLLATE "default" = s.tags_hash
         )
        RETURNING 1
    )"""
_NOTHING_REMOVED = "removed AS (SELECT 1 WHERE false)"

# ON COMMIT DROP is not enough when the caller's transaction holds more than one run.
_DROP_TOUCHED = "DROP TABLE IF EXISTS scoring_touched"


def _recompute(*, touched: bool) -> str:
    """The statement computing the touched keys (incremental) or every key (full)."""
    if touched:
        return _RECOMPUTE.format(count=_COUNT_TOUCHED.format(counted=_COUNTED), removed=_NOTHING_REMOVED)
    return _RECOMPUTE.format(count=_COUNT_ALL.format(counted=_COUNTED), removed=_REMOVED)


def statements(*, incremental: bool) -> list[str]:
    """The statements of one run, in order, to run in one transaction; the last is the recompute
    (the benchmark explains it after running the others)."""
    if not incremental:
        return [_WORK_MEM, _recompute(touched=False)]
    return [_WORK_MEM, _DROP_TOUCHED, _TOUCHED, _ANALYZE_TOUCHED, _recompute(touched=True)]


# The advisory lock keys: one scoring run at a time; score inputs (injections, gate results).
_RUN_LOCK = "memory.compute_reuse_scores"
INPUTS_LOCK = "memory.score_inputs"


def hold_inputs() -> None:
    """Call in the transaction that writes injections or gate results, before writing: a scoring
    run then never reads its watermark while this write is in flight."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock_shared(hashtext(%s))", [INPUTS_LOCK])


def _watermarks() -> tuple[int, int]:
    """The highest injection and gate-result ids, read while no input write is in flight (the
    exclusive lock waits for them to commit, and is released at once)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(hashtext(%s))", [INPUTS_LOCK])
        try:
            last_injection = LearningInjection.objects.aggregate(top=Max("id"))["top"] or 0
            last_gate = GateResult.objects.aggregate(top=Max("id"))["top"] or 0
        finally:
            cursor.execute("SELECT pg_advisory_unlock(hashtext(%s))", [INPUTS_LOCK])
    return last_injection, last_gate


@dataclass(frozen=True)
class Corrections:
    """What a full run changed against the stored scores (see the module docstring)."""

    corrected: int
    created: int
    removed: int

    @property
    def total(self) -> int:
        return self.corrected + self.created + self.removed

    def __str__(self) -> str:
        return f"{self.corrected} corrected, {self.created} created, {self.removed} removed"


@dataclass(frozen=True)
class ScoringOutcome:
    mode: str
    keys_updated: int
    seconds: float
    corrections: Corrections | None = None


def _one_run_at_a_time() -> None:
    """A transaction-level advisory lock, released at commit: scores have one writer at a time."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [_RUN_LOCK])


# Not durable: load_demo runs each app's demo, which calls this, in one transaction.
@transaction.atomic
def compute_reuse_scores(*, full: bool = False) -> ScoringOutcome:
    started = timezone.now()
    _one_run_at_a_time()
    previous = ScoringRun.objects.first()
    last_injection, last_gate = _watermarks()
    incremental = not full and previous is not None
    params = {
        "last_injection": previous.last_injection_id if incremental else 0,
        "last_gate": previous.last_gate_result_id if incremental else 0,
        "go_gate": GO_GATE,
        "floor": settings.MEMORY_REUSE_SIMILARITY_FLOOR,
        "w_inj": WEIGHT_INJECTIONS,
        "w_go": WEIGHT_GATE8_GO,
        "w_dom": WEIGHT_DOMAINS,
        "now": started,
    }
    with connection.cursor() as cursor:
        for statement in statements(incremental=incremental):
            cursor.execute(statement, params)
        updated, created, corrected, removed = cursor.fetchone()
        for statement in _RESTORE:
            cursor.execute(statement)
    corrections = None if incremental else Corrections(corrected=corrected, created=created, removed=removed)
    finished = timezone.now()
    ScoringRun.objects.create(
        mode=ScoringRun.Mode.INCREMENTAL if incremental else ScoringRun.Mode.FULL,
        started_at=started,
        finished_at=finished,
        keys_updated=updated,
        keys_corrected=corrections.corrected if corrections else None,
        keys_created=corrections.created if corrections else None,
        keys_removed=corrections.removed if corrections else None,
        last_injection_id=last_injection,
        last_gate_result_id=last_gate,
    )
    # The first run ever creates every key: that is building the scores, not correcting them.
    if corrections and corrections.total and previous is not None:
        logger.warning("[scoring] the full run corrected %s key(s): %s", corrections.total, corrections)
    mode = "incremental" if incremental else "full"
    return ScoringOutcome(
        mode=mode, keys_updated=updated, seconds=(finished - started).total_seconds(), corrections=corrections
    )


_CREATE_TOUCHED = "CREATE TEMPORARY TABLE scoring_touched (story text, gate integer, tags_hash text) ON COMMIT DROP"


def rescore(keys: Iterable[tuple[str, int, str]]) -> None:
    """Recompute these (story, gate, tags_hash) keys now, inside the caller's transaction: their
    injections were erased with a learning, which no incremental run can see (it follows new ids
    only). A key left without injections loses its row, as if it had never been injected."""
    rows = sorted(set(keys))
    if not rows:
        return
    _one_run_at_a_time()
    params: dict[str, Any] = {
        "go_gate": GO_GATE,
        "floor": settings.MEMORY_REUSE_SIMILARITY_FLOOR,
        "w_inj": WEIGHT_INJECTIONS,
        "w_go": WEIGHT_GATE8_GO,
        "w_dom": WEIGHT_DOMAINS,
        "now": timezone.now(),
    }
    with connection.cursor() as cursor:
        cursor.execute(_DROP_TOUCHED)
        cursor.execute(_CREATE_TOUCHED)
        cursor.executemany("INSERT INTO scoring_touched VALUES (%s, %s, %s)", rows)
        cursor.execute(
            "DELETE FROM memory_reusescore s USING scoring_touched t"
            " WHERE s.story = t.story AND s.gate = t.gate AND s.tags_hash = t.tags_hash"
        )
        cursor.execute(_recompute(touched=True), params)
