"""TC-NEG-02 / TC-ERR-08: the bounds the seed states (section 5.2 and H-04) are enforced."""

from __future__ import annotations

from decimal import Decimal

import pytest

from memory import scope
from memory.veille import TITLE_MAX, NoteError, parse_note


def note(title: str, body: str = "Body.") -> str:
    return f"---\ntitle: {title}\ndate: 2026-05-01\nverdict_veille: signal\nimpact_pv: fort\n---\n{body}\n"


@pytest.mark.parametrize("score", [Decimal("-0.0001"), Decimal("1000000"), float("nan"), float("inf")])
def test_tc_neg_02_reuse_scores_outside_0_999999_9999_are_refused(score):
    with pytest.raises(ValueError, match="score"):
        scope.promotion_target(scope.Scope.STORY, score)


def test_tc_neg_02_the_upper_bound_itself_is_accepted():
    assert scope.promotion_target(scope.Scope.STORY, Decimal("999999.9999")) == scope.Scope.DOMAIN


def test_tc_neg_02_a_watch_note_title_over_256_characters_is_refused():
    assert parse_note(note("t" * TITLE_MAX), "ok.md")["title"] == "t" * TITLE_MAX
    with pytest.raises(NoteError):
        parse_note(note("t" * (TITLE_MAX + 1)), "long.md")


def test_tc_neg_02_a_long_summary_is_cut_to_2000_characters():
    parsed = parse_note(note("t", "## Résumé\n\n" + "x" * 5000), "long-summary.md")
    assert len(parsed["summary"]) <= 2000
