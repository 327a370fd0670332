"""The scope lifecycle rules (seed 004, section 2.4, flow B4): pure tests, no database.

The whitelist, thresholds and ages are restated here from the seed rather than read from the module,
so that a change to `memory.scope` has to be a deliberate change to these tables too.
"""

from __future__ import annotations

import datetime as dt
import itertools
from decimal import Decimal

import pytest

from memory.scope import (
    ALLOWED,
    ARCHIVED_TERMINAL_MESSAGE,
    EVICTION_AGE_DAYS,
    PROMOTE_TO_DOMAIN,
    PROMOTE_TO_GLOBAL,
    Scope,
    TransitionRefused,
    age_days,
    demotion_target,
    migrate_scope,
    promotion_target,
    restore_target,
    should_evict,
    transition,
)

STORY, DOMAIN, GLOBAL, ARCHIVED = Scope.STORY, Scope.DOMAIN, Scope.GLOBAL, Scope.ARCHIVED

# Section 2.4 + section 7 (whitelist): the two promotions, and archiving from every live scope.
WHITELIST = {(STORY, DOMAIN), (DOMAIN, GLOBAL), (STORY, ARCHIVED), (DOMAIN, ARCHIVED), (GLOBAL, ARCHIVED)}
ALL_PAIRS = list(itertools.product(Scope, Scope))
REFUSED_FROM_LIVE = [(s, t) for s, t in ALL_PAIRS if (s, t) not in WHITELIST and s is not ARCHIVED]
FROM_ARCHIVED = [(ARCHIVED, t) for t in Scope]


def pair_id(pair: tuple[Scope, Scope]) -> str:
    return f"{pair[0].value}->{pair[1].value}"


def test_scope_values_are_the_persisted_lower_case_strings() -> None:
    assert [s.value for s in Scope] == ["story", "domain", "global", "archived"]
    assert Scope("global") is GLOBAL
    assert f"{DOMAIN}" == "domain"


def test_lifecycle_constants_match_the_seed() -> None:
    """INV-295-09/10/11: 0.3 and 0.6 on the raw sum, 56 days."""
    assert PROMOTE_TO_DOMAIN == 0.3
    assert PROMOTE_TO_GLOBAL == 0.6
    assert EVICTION_AGE_DAYS == 56
    assert 0 < PROMOTE_TO_DOMAIN < PROMOTE_TO_GLOBAL


# --- TC-NOM-16 / TC-ERR-07 / TC-ERR-11: the transition table ------------------------------------------


@pytest.mark.parametrize("pair", ALL_PAIRS, ids=pair_id)
def test_tc_nom_16_transition_matrix_is_exactly_the_whitelist(pair: tuple[Scope, Scope]) -> None:
    """All 16 pairs: the five whitelisted ones pass, every other one raises TransitionRefused."""
    source, target = pair
    if pair in WHITELIST:
        assert transition(source, target) is target
    else:
        with pytest.raises(TransitionRefused):
            transition(source, target)


def test_tc_nom_16_allowed_table() -> None:
    """TC-NOM-16 (INV-295-TR-01/03/05/06/09): five allowed transitions, the published ALLOWED table."""
    assert ALLOWED == WHITELIST
    assert len(ALLOWED) == 5


@pytest.mark.parametrize("pair", sorted(WHITELIST), ids=pair_id)
def test_tc_nom_16_allowed_transitions_accept_strings(pair: tuple[Scope, Scope]) -> None:
    """Persisted scopes are plain strings; they go through the same table."""
    source, target = pair
    assert transition(source.value, target.value) is target


@pytest.mark.parametrize("pair", REFUSED_FROM_LIVE, ids=pair_id)
def test_tc_err_07_refused_transition_leaves_learning_unchanged(pair: tuple[Scope, Scope]) -> None:
    """TC-ERR-07 (ERR-295-07, INV-295-TR-02/04/07/08): downgrades, the story->global skip and
    same-scope no-ops are refused; the refusal happens before anything is assigned."""
    source, target = pair
    learning = {"scope": source.value, "text": "x"}
    with pytest.raises(TransitionRefused) as refused:
        learning["scope"] = transition(learning["scope"], target)
    assert learning == {"scope": source.value, "text": "x"}
    assert refused.value.source is source
    assert refused.value.target is target
    assert source.value in str(refused.value)
    assert target.value in str(refused.value)


def test_tc_err_07_never_downgrade() -> None:
    """Section 2.4 "jamais de downgrade": every backwards move between live scopes is refused."""
    order = [STORY, DOMAIN, GLOBAL]
    for higher, lower in itertools.combinations(reversed(order), 2):
        with pytest.raises(TransitionRefused):
            transition(higher, lower)


def test_tc_err_07_story_to_global_skip_is_refused() -> None:
    """Section 7: the story->global jump is not specified, so the whitelist refuses it."""
    with pytest.raises(TransitionRefused) as refused:
        transition(STORY, GLOBAL)
    assert (refused.value.source, refused.value.target) == (STORY, GLOBAL)


@pytest.mark.parametrize("pair", FROM_ARCHIVED, ids=pair_id)
def test_tc_err_11_archived_is_terminal(pair: tuple[Scope, Scope]) -> None:
    """TC-ERR-11 (INV-295-TR-10..13): transition(archived, *) is always refused, with the seed's message."""
    source, target = pair
    learning = {"scope": source.value}
    with pytest.raises(TransitionRefused) as refused:
        learning["scope"] = transition(learning["scope"], target.value)
    assert learning == {"scope": "archived"}
    assert str(refused.value) == "ARCHIVED terminal, résolution manuelle uniquement"
    assert refused.value.message == ARCHIVED_TERMINAL_MESSAGE
    assert (refused.value.source, refused.value.target) == (ARCHIVED, target)


def test_transition_refused_is_an_exception_with_its_pair() -> None:
    exc = TransitionRefused(GLOBAL, STORY)
    assert isinstance(exc, Exception)
    assert (exc.source, exc.target) == (GLOBAL, STORY)
    assert str(exc) == exc.message


@pytest.mark.parametrize(("current", "target"), [("story", "bogus"), ("Story", "domain"), ("", "domain")])
def test_unknown_scope_is_invalid_data_not_a_refusal(current: str, target: str) -> None:
    with pytest.raises(ValueError, match="is not a valid Scope"):
        transition(current, target)


# --- TC-NOM-09: promotion thresholds ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("current", "score", "expected"),
    [
        (STORY, 0.29, None),
        (STORY, 0.30, DOMAIN),
        (DOMAIN, 0.59, None),
        (DOMAIN, 0.60, GLOBAL),
        (STORY, Decimal("0.2999"), None),
        (STORY, Decimal("0.3000"), DOMAIN),
        (DOMAIN, Decimal("0.5999"), None),
        (DOMAIN, Decimal("0.6000"), GLOBAL),
    ],
    ids=[
        "story@0.29",
        "story@0.30",
        "domain@0.59",
        "domain@0.60",
        "story@D0.2999",
        "story@D0.3",
        "domain@D0.5999",
        "domain@D0.6",
    ],
)
def test_tc_nom_09_promotion_threshold_boundaries(
    current: Scope, score: float | Decimal, expected: Scope | None
) -> None:
    """TC-NOM-09 (INV-295-09/10): >= 0.3 story->domain, >= 0.6 domain->global, inclusive, on the raw sum."""
    assert promotion_target(current, score) is expected
    assert promotion_target(current.value, score) is expected


@pytest.mark.parametrize(
    ("current", "score", "expected"),
    [
        (STORY, 0.0, None),  # no score row: looked up as 0.0 (section 2.3, Écart 9)
        (STORY, 0.6, DOMAIN),  # one step per run: story->global is not a transition
        (STORY, 1.8, DOMAIN),  # TC-NOM-05's L1 score, still one step
        (DOMAIN, 0.3, None),  # domain needs 0.6
        (DOMAIN, 1.0, GLOBAL),  # TC-NOM-05's L2 score
        (GLOBAL, 999.0, None),  # nothing above global
        (ARCHIVED, 999.0, None),  # terminal, never promoted
    ],
)
def test_tc_nom_09_promotion_is_one_step(current: Scope, score: float, expected: Scope | None) -> None:
    assert promotion_target(current, score) is expected


@pytest.mark.parametrize(
    ("nb_injections", "nb_gate8_go", "nb_domains", "from_story", "from_domain"),
    [
        (0, 0, 1, None, None),  # 0.2: one domain alone is below 0.3
        (1, 0, 0, DOMAIN, None),  # 0.4
        (0, 1, 0, DOMAIN, None),  # 0.4
        (0, 0, 2, DOMAIN, None),  # 0.4
        (1, 0, 1, DOMAIN, GLOBAL),  # 0.6000000000000001
        (0, 0, 3, DOMAIN, GLOBAL),  # 0.6000000000000001
        (2, 0, 0, DOMAIN, GLOBAL),  # 0.8
        (1, 1, 0, DOMAIN, GLOBAL),  # 0.8
    ],
)
def test_tc_nom_09_thresholds_on_raw_formula_sums(
    nb_injections: int, nb_gate8_go: int, nb_domains: int, from_story: Scope | None, from_domain: Scope | None
) -> None:
    """Section 2.3 examples: >= 0.3 means one injection OR one gate-8 GO OR two domains; >= 0.6 means e.g.
    two injections or one injection + one GO. Float noise around 0.6 must not change the outcome."""
    score = 0.4 * nb_injections + 0.4 * nb_gate8_go + 0.2 * nb_domains
    assert promotion_target(STORY, score) is from_story
    assert promotion_target(DOMAIN, score) is from_domain


def test_tc_nom_09_float_noise_is_read_at_stored_precision() -> None:
    """A sum worth 0.6 but computed as 0.5999999999999999 compares like the stored Decimal 0.6000."""
    assert promotion_target(DOMAIN, 0.5999999999999999) is GLOBAL
    assert promotion_target(STORY, 0.1 + 0.2) is DOMAIN


@pytest.mark.parametrize("score", [-0.01, float("nan"), float("inf"), Decimal("NaN"), Decimal("-1"), 1_000_000])
def test_tc_err_08_reuse_score_out_of_bounds_is_refused(score: float | Decimal | int) -> None:
    """ERR-295-08 for D-295-08 (reuse_score in [0, 999999.9999]): no silent non-promotion on bad data."""
    with pytest.raises(ValueError, match="D-295-08"):
        promotion_target(STORY, score)


@pytest.mark.parametrize("score", ["0.5", None, True])
def test_reuse_score_must_be_a_number(score: object) -> None:
    with pytest.raises(TypeError):
        promotion_target(STORY, score)  # type: ignore[arg-type]


# --- TC-NOM-10 / TC-NEG-03 / INV-plan-09: eviction ------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "age", "injections", "evicted"),
    [
        ("A", 57, 0, True),  # old, never injected: archived
        ("B", 57, 1, False),  # old, injected: kept
        ("C", 10, 0, False),  # young, never injected: kept
        ("D", 10, 3, False),  # young, injected: kept
    ],
)
def test_tc_nom_10_eviction_matrix(name: str, age: int, injections: int, evicted: bool) -> None:
    """TC-NOM-10 (INV-295-11): conjunctive rule, the archive contains A and not B, C or D."""
    assert should_evict(age_days=age, injections=injections) is evicted


@pytest.mark.parametrize(("age", "evicted"), [(55, False), (56, False), (57, True), (400, True)])
def test_tc_neg_03_eviction_age_boundary(age: int, evicted: bool) -> None:
    """TC-NEG-03: strictly more than 56 days; day 56 is kept, day 57 is evicted."""
    assert should_evict(age_days=age, injections=0) is evicted


def test_tc_neg_03_eviction_age_boundary_from_dates() -> None:
    today = dt.date(2025, 6, 30)
    day_56 = age_days(today, today - dt.timedelta(days=56), None)
    day_57 = age_days(today, today - dt.timedelta(days=57), None)
    assert (day_56, day_57) == (56, 57)
    assert should_evict(age_days=day_56, injections=0) is False
    assert should_evict(age_days=day_57, injections=0) is True


def test_eviction_age_reference() -> None:
    """INV-plan-09 (H-03, Écart 14): the age counts from date_created, falling back on `date` (D-295-12)."""
    today = dt.date(2025, 6, 30)
    created, older = dt.date(2025, 6, 1), dt.date(2025, 1, 1)
    assert age_days(today, created, older) == 29  # date_created wins when both exist
    assert age_days(today, None, older) == 180  # fallback on date
    assert age_days(today, created, None) == 29
    assert age_days(today, None, None) is None


def test_eviction_age_reference_accepts_datetimes() -> None:
    today = dt.datetime(2025, 6, 30, 23, 59)
    assert age_days(today, dt.datetime(2025, 5, 4, 0, 1), None) == 57
    assert age_days(dt.date(2025, 6, 30), None, dt.datetime(2025, 5, 5, 12, 0)) == 56


def test_eviction_without_any_date_does_not_evict() -> None:
    """No usable date: archiving is terminal, so an unknown age is not treated as an old one."""
    assert should_evict(age_days=age_days(dt.date(2025, 6, 30), None, None), injections=0) is False


def test_eviction_future_date_gives_negative_age_and_keeps() -> None:
    today = dt.date(2025, 6, 30)
    age = age_days(today, today + dt.timedelta(days=3), None)
    assert age == -3
    assert should_evict(age_days=age, injections=0) is False


def test_eviction_negative_injections_is_invalid() -> None:
    with pytest.raises(ValueError, match="negative"):
        should_evict(age_days=100, injections=-1)


@pytest.mark.parametrize("scope", [STORY, DOMAIN, GLOBAL])
def test_tc_nom_10_eviction_applies_to_every_live_scope(scope: Scope) -> None:
    """Section 2.4 computes the age "pour chaque learning": an evicted learning of any live scope
    can be archived."""
    assert should_evict(age_days=57, injections=0)
    assert transition(scope, ARCHIVED) is ARCHIVED


# --- TC-NOM-08: migration ---------------------------------------------------------------------------------


def test_tc_nom_08_migration_sets_story_and_is_idempotent() -> None:
    """TC-NOM-08 (INV-295-08): entries without a scope become story; a second run changes nothing."""
    entries = [{"id": 1}, {"id": 2, "scope": "domain"}, {"id": 3, "scope": "global"}, {"id": 4, "scope": "archived"}]

    def migrate(rows: list[dict]) -> list[dict]:
        return [{**row, "scope": migrate_scope(row.get("scope")).value} for row in rows]

    once = migrate(entries)
    assert [row["scope"] for row in once] == ["story", "domain", "global", "archived"]
    assert migrate(once) == once
    assert entries[0] == {"id": 1}  # the pure rule returns a value, it does not edit the entry


@pytest.mark.parametrize("scope", list(Scope))
def test_tc_nom_08_present_scope_is_kept(scope: Scope) -> None:
    assert migrate_scope(scope.value) is scope
    assert migrate_scope(scope) is scope
    assert migrate_scope(migrate_scope(scope.value)) is scope


def test_tc_nom_08_missing_scope_becomes_story() -> None:
    assert migrate_scope(None) is STORY
    assert migrate_scope(migrate_scope(None)) is STORY


@pytest.mark.parametrize("bad", ["", "Story", "GLOBAL", "team", " story"])
def test_tc_nom_08_unknown_scope_is_refused_not_overwritten(bad: str) -> None:
    with pytest.raises(ValueError, match="is not a valid Scope"):
        migrate_scope(bad)


@pytest.mark.parametrize(("current", "lower"), [("global", Scope.DOMAIN), ("domain", Scope.STORY)])
def test_an_operator_demotes_one_step_down_the_reverse_of_a_promotion(current, lower):
    assert demotion_target(current) is lower


@pytest.mark.parametrize("current", ["story", "archived"])
def test_a_story_learning_is_not_demoted_and_an_archived_one_is_restored_instead(current):
    with pytest.raises(TransitionRefused):
        demotion_target(current)


def test_a_restored_learning_starts_again_at_story_and_only_an_archived_one_is_restored():
    assert restore_target("archived") is Scope.STORY
    for live in ("story", "domain", "global"):
        with pytest.raises(TransitionRefused, match="only an archived learning is restored"):
            restore_target(live)
