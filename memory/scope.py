"""The scope lifecycle of a learning (seed 004, section 2.4, flow B4): migration, promotion, eviction.

A learning starts in the `story` it was learned in, is promoted to its `domain` and then to `global`
as it proves reusable, and is archived when it goes stale. This module is the pure rule book
(the seed's `scope_fsm`): which transitions exist, which reuse score earns a promotion, which age
makes a learning stale. Applying the rules (reading scores, writing the archive, journaling refusals)
belongs to the lifecycle service; keeping the rules free of Django lets them be tested exhaustively.

Readings of the seed made here (each one is also stated where it applies):

* Whitelist (section 7, "scope_fsm refuse toute transition non explicitement autorisée"): exactly five
  transitions exist, the two promotions and archiving from each live scope. That is five allowed
  rules, matching the five ids TC-NOM-16 cites (INV-295-TR-01/03/05/06/09). Everything else is
  refused: downgrades, the story->global skip, same-scope no-ops (no rule allows them) and, being
  terminal, anything out of `archived` (INV-295-TR-10..13). The seed does not say which numbered
  TR id is which pair, so the ids are not attached to pairs here.
* Eviction applies to every live scope: section 2.4 computes the age "pour chaque learning", with no
  scope condition, so story, domain and global learnings can all be archived.
* One promotion step at a time: "Applique strictement" story->domain at >= 0.3 and domain->global at
  >= 0.6, and story->global is not a transition. `promotion_target()` therefore returns the next
  step only; a story learning scoring 0.8 becomes `domain` now and `global` on a later run.
"""

from __future__ import annotations

import datetime as dt
import enum
import math
from decimal import ROUND_HALF_EVEN, Decimal

__all__ = [
    "ALLOWED",
    "ARCHIVED_TERMINAL_MESSAGE",
    "EVICTION_AGE_DAYS",
    "PROMOTE_TO_DOMAIN",
    "PROMOTE_TO_GLOBAL",
    "REUSE_SCORE_MAX",
    "Scope",
    "TransitionRefused",
    "age_days",
    "demotion_target",
    "migrate_scope",
    "promotion_target",
    "restore_target",
    "should_evict",
    "transition",
]


class Scope(enum.StrEnum):
    """Where a learning applies. Values are the lower-case strings persisted in `scope`."""

    STORY = "story"
    DOMAIN = "domain"
    GLOBAL = "global"
    ARCHIVED = "archived"


PROMOTE_TO_DOMAIN = 0.3
"""INV-295-09: story->domain once reuse_score >= 0.3, applied to the raw weighted sum (M-01, H-01)."""

PROMOTE_TO_GLOBAL = 0.6
"""INV-295-10: domain->global once reuse_score >= 0.6, applied to the raw weighted sum (M-01, H-01)."""

EVICTION_AGE_DAYS = 56
"""INV-295-11: a learning older than this many days (strictly) and never injected is archived."""

REUSE_SCORE_MAX = Decimal("999999.9999")
"""D-295-08: a reuse score lies in [0, 999999.9999] with four decimals."""

_SCORE_QUANTUM = Decimal("0.0001")

ARCHIVED_TERMINAL_MESSAGE = "ARCHIVED terminal, résolution manuelle uniquement"
"""Section 2.4: the exact refusal for any transition out of `archived` (TC-ERR-11)."""

ALLOWED: frozenset[tuple[Scope, Scope]] = frozenset(
    {
        (Scope.STORY, Scope.DOMAIN),  # promotion, INV-295-09
        (Scope.DOMAIN, Scope.GLOBAL),  # promotion, INV-295-10
        (Scope.STORY, Scope.ARCHIVED),  # eviction, INV-295-11
        (Scope.DOMAIN, Scope.ARCHIVED),  # eviction, INV-295-11
        (Scope.GLOBAL, Scope.ARCHIVED),  # eviction, INV-295-11
    }
)
"""The whitelist of transitions (seed's ALLOWED_TRANSITIONS, INV-295-TR-01..09); all others are refused."""

_PROMOTIONS: dict[Scope, tuple[Scope, float]] = {
    Scope.STORY: (Scope.DOMAIN, PROMOTE_TO_DOMAIN),
    Scope.DOMAIN: (Scope.GLOBAL, PROMOTE_TO_GLOBAL),
}


class TransitionRefused(Exception):
    """A transition outside the whitelist (ERR-295-07).

    The caller keeps the learning unchanged, reports the message on stderr / in its journal and
    counts it (`refused_transitions`); raising before anything is written is what guarantees the
    "scope inchangé" observable of TC-ERR-07 and TC-ERR-11.
    """

    def __init__(self, source: Scope, target: Scope, message: str | None = None) -> None:
        self.source = source
        self.target = target
        if message is None:
            message = f"transition {source.value} -> {target.value} refusée : absente de la liste blanche"
        self.message = message
        super().__init__(message)


def transition(current: Scope | str, target: Scope | str) -> Scope:
    """Return `target` if `current -> target` is whitelisted, else raise `TransitionRefused`.

    Never downgrades (section 2.4, "jamais de downgrade"), never skips a step (story->global, section
    7) and never leaves `archived`: `transition(archived, *)`, including archived->archived, always
    raises with `ARCHIVED_TERMINAL_MESSAGE` (INV-295-TR-10..13) because restoring an archived learning
    is a manual decision outside the automation (section 10). A same-scope request is refused too:
    it is not in the whitelist, and a caller that has nothing to change should not call this.

    Strings are accepted for persisted values; an unknown scope raises `ValueError` (invalid data,
    ERR-295-01), not `TransitionRefused`, so a corrupt row is not mistaken for a refused move.
    """
    source, destination = Scope(current), Scope(target)
    if source is Scope.ARCHIVED:
        raise TransitionRefused(source, destination, ARCHIVED_TERMINAL_MESSAGE)
    if (source, destination) not in ALLOWED:
        raise TransitionRefused(source, destination)
    return destination


_DEMOTIONS: dict[Scope, Scope] = {Scope.GLOBAL: Scope.DOMAIN, Scope.DOMAIN: Scope.STORY}


def demotion_target(current: Scope | str) -> Scope:
    """The scope an operator's demotion moves a learning to: one step down, the reverse of a
    promotion (global -> domain -> story). Not a transition of the automation, which never
    downgrades (see `transition`): a person decides it. A story learning has nowhere to go, and
    an archived one is restored, not demoted: both raise `TransitionRefused`."""
    source = Scope(current)
    if source is Scope.ARCHIVED:
        raise TransitionRefused(source, Scope.STORY, ARCHIVED_TERMINAL_MESSAGE)
    if source not in _DEMOTIONS:
        raise TransitionRefused(source, source, "a story learning cannot be demoted further")
    return _DEMOTIONS[source]


def restore_target(current: Scope | str) -> Scope:
    """Where an operator's restore puts an archived learning: `story`, where every learning starts
    (section 10, "résolution manuelle"). The scope it was archived from is not kept, and its reuse
    score still counts: the promotion runs move it up again, one step at a time, if it earns it."""
    source = Scope(current)
    if source is not Scope.ARCHIVED:
        raise TransitionRefused(source, Scope.STORY, f"only an archived learning is restored, not a {source.value} one")
    return Scope.STORY


def _as_score(reuse_score: float | int | Decimal) -> Decimal:
    """The score at its persisted precision (4 decimals, D-295-08), validated against its bounds.

    Quantising means a float sum and the Decimal read back from the scores table compare the same
    way: 0.4 + 0.2 may come out as 0.6000000000000001 or, summed differently, as 0.5999999999999999,
    and both are the 0.6000 that gets stored. Out-of-bounds values (negative, NaN, infinite, above
    999999.9999) are refused with `ValueError` (ERR-295-08) instead of silently never promoting.
    """
    if isinstance(reuse_score, bool) or not isinstance(reuse_score, (int, float, Decimal)):
        raise TypeError(f"reuse_score must be a number, got {type(reuse_score).__name__}: {reuse_score!r}")
    if isinstance(reuse_score, Decimal):
        finite = reuse_score.is_finite()
    else:
        finite = not isinstance(reuse_score, float) or math.isfinite(reuse_score)
    if not finite:
        raise ValueError(f"reuse_score out of bounds [0, {REUSE_SCORE_MAX}] (D-295-08): {reuse_score!r}")
    # Bounds are checked on the raw value (so -0.00001 is refused, not rounded to 0) and again after
    # rounding (999999.99995 rounds above the maximum); quantising is skipped for huge values, which
    # would overflow the decimal context and are out of bounds anyway.
    raw = Decimal(repr(reuse_score) if isinstance(reuse_score, float) else reuse_score)
    score = raw.quantize(_SCORE_QUANTUM, rounding=ROUND_HALF_EVEN) if raw <= REUSE_SCORE_MAX else raw
    if not Decimal(0) <= raw or score > REUSE_SCORE_MAX:
        raise ValueError(f"reuse_score out of bounds [0, {REUSE_SCORE_MAX}] (D-295-08): {reuse_score!r}")
    return score


def promotion_target(current: Scope | str, reuse_score: float | int | Decimal) -> Scope | None:
    """The scope a learning earns with this reuse score, or `None` if it stays where it is.

    story -> domain at >= 0.3 (INV-295-09), domain -> global at >= 0.6 (INV-295-10), compared to the
    raw weighted sum (M-01, H-01), inclusive (">="). One step only: a story learning at 0.8 goes to
    `domain`, since story->global is not a transition (see the module docstring). `global` and
    `archived` are never promoted. A learning with no score row has score 0.0 (section 2.3, Écart 9)
    and therefore stays put; that default is the caller's lookup, not this function's.
    """
    source = Scope(current)
    score = _as_score(reuse_score)
    if source not in _PROMOTIONS:
        return None
    destination, threshold = _PROMOTIONS[source]
    if score >= Decimal(str(threshold)):
        return transition(source, destination)
    return None


def age_days(today: dt.date, date_created: dt.date | None, date: dt.date | None) -> int | None:
    """Whole days since the learning was created, or `None` if it carries no date at all.

    The reference is `date_created` (written by gov-compounder); when it is missing, the older `date`
    field (D-295-12) is read as the creation date (section 2.4, Écart 14, H-03, INV-plan-09).
    Datetimes are reduced to their date so a timestamped header does not break the subtraction.
    A date in the future gives a negative age, which never evicts.
    """
    reference = date_created if date_created is not None else date
    if reference is None:
        return None
    if isinstance(today, dt.datetime):
        today = today.date()
    if isinstance(reference, dt.datetime):
        reference = reference.date()
    return (today - reference).days


def should_evict(*, age_days: int | None, injections: int) -> bool:
    """True iff the learning is stale: `age_days > 56 AND nb_injections == 0` (INV-295-11).

    Conjunctive on purpose (TC-NOM-10): an old learning that was injected even once stays, and so
    does a young one that never was. Day 56 itself is kept, day 57 is evicted (TC-NEG-03). A learning
    with no usable date (`age_days is None`) is not evicted: archiving is terminal, so an unknown age
    must not count as an old one. Negative injection counts are invalid data and raise `ValueError`.
    """
    if injections < 0:
        raise ValueError(f"nb_injections cannot be negative: {injections}")
    if age_days is None:
        return False
    return age_days > EVICTION_AGE_DAYS and injections == 0


def migrate_scope(entry_scope: str | None) -> Scope:
    """The scope of a learning after the initial migration (section 2.4 `--migrate`, INV-295-08).

    A missing scope (`None`) becomes `story`; a present one is kept as is, which is what makes the
    migration idempotent (TC-NOM-08): running it twice changes nothing. A present but unknown value
    (including `""` or a different case such as `"Story"`) raises `ValueError` instead of being
    overwritten with `story`, since that would silently demote a learning.
    """
    if entry_scope is None:
        return Scope.STORY
    return Scope(entry_scope)
