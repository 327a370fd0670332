"""Geometry of the subject page's charts: a fixed [0, 1] scale, evenly spaced points, one line per
trait in a stable order, and nothing drawn without data."""

from __future__ import annotations

from memory.subjects.charts import (
    EMOTION_HEIGHT,
    LABELLED_POINTS,
    TRAIT_HEIGHT,
    EmotionPoint,
    TraitSnapshotPoint,
    emotion_chart,
    trait_chart,
)
from memory.subjects.documents import TRAITS


def ys(points: str) -> list[float]:
    return [float(pair.split(",")[1]) for pair in points.split()]


def xs(points: str) -> list[float]:
    return [float(pair.split(",")[0]) for pair in points.split()]


def test_no_data_draws_no_chart():
    assert emotion_chart([]) is None
    assert trait_chart([], TRAITS) is None


def test_emotion_intensities_use_a_fixed_scale_and_are_evenly_spaced():
    chart = emotion_chart(
        [EmotionPoint("a", "neutre", 0.0), EmotionPoint("b", "joyeux", 1.0), EmotionPoint("c", "triste", 0.5)]
    )

    low, high, middle = ys(chart["points"])
    grid = {line["label"]: line["y"] for line in chart["grid"]}
    assert (low, high, middle) == (grid["0"], grid["1"], grid["0.5"])
    assert 0 < high < middle < low < EMOTION_HEIGHT
    first, second, third = xs(chart["points"])
    assert round(second - first, 2) == round(third - second, 2)
    assert [m["emotion"] for m in chart["markers"]] == ["neutre", "joyeux", "triste"]
    assert chart["labelled"]


def test_a_long_history_keeps_its_names_in_the_tooltips_only():
    chart = emotion_chart([EmotionPoint(str(n), "neutre", 0.5) for n in range(LABELLED_POINTS + 1)])

    assert not chart["labelled"]


def test_out_of_range_values_stay_inside_the_box():
    chart = emotion_chart([EmotionPoint("a", "x", 1.7), EmotionPoint("b", "y", -0.2)])

    grid = {line["label"]: line["y"] for line in chart["grid"]}
    assert ys(chart["points"]) == [grid["1"], grid["0"]]


def test_one_line_per_trait_in_the_seed_order_and_a_single_snapshot_draws_flat_lines():
    chart = trait_chart([TraitSnapshotPoint("t0", dict.fromkeys(TRAITS, 0.5), "Initial default values")], TRAITS)

    assert [line["trait"] for line in chart["lines"]] == list(TRAITS)
    assert [line["index"] for line in chart["lines"]] == list(range(7))
    for line in chart["lines"]:
        assert len(set(ys(line["points"]))) == 1
        assert 0 < ys(line["points"])[0] < TRAIT_HEIGHT
        assert len(xs(line["points"])) == 2
    assert chart["count"] == 1
