"""Two small charts of a subject's page, drawn on the server as inline SVG (no chart library, no
script): the emotion timeline (intensity per recorded emotion, named) and the personality's trait
history (one line per trait over the snapshots).

Pure: numbers and labels in, coordinates out, so the geometry is tested without a template and
the templates only place what is computed here. Both charts use a fixed [0, 1] scale, the range
of intensities and traits, so two subjects' charts read the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

WIDTH = 640
EMOTION_HEIGHT = 170
TRAIT_HEIGHT = 190
LEFT, RIGHT, TOP, BOTTOM = 34, 12, 26, 22  # room for the y labels and the emotion names above points
LABELLED_POINTS = 24  # beyond this many points the names would overlap: they stay in each point's tooltip
GRID = (0.0, 0.5, 1.0)
LABEL_INSET = 30  # half the width of a long emotion name ("enthousiaste") at the chart's font size


@dataclass(frozen=True)
class EmotionPoint:
    """One recorded emotion: ``at`` is already formatted for display."""

    at: str
    emotion: str
    intensity: float
    context: str = ""


@dataclass(frozen=True)
class TraitSnapshotPoint:
    at: str
    traits: Mapping[str, float]
    reason: str = ""


def _y(value: float, height: int) -> float:
    """Top of the plot for 1.0, bottom for 0.0; values outside are clamped to stay in the box."""
    value = min(1.0, max(0.0, value))
    return round(TOP + (1.0 - value) * (height - TOP - BOTTOM), 2)


def _xs(count: int, inset: int = 0) -> list[float]:
    """Evenly spaced: the history is a sequence of moments, and real gaps (a night between two
    conversations) would squash a day's moves into one pixel. One point sits in the middle;
    ``inset`` keeps the first and last points (and their centred names) off the plot's edges."""
    left, right = LEFT + inset, WIDTH - RIGHT - inset
    if count == 1:
        return [round(left + (right - left) / 2, 2)]
    step = (right - left) / (count - 1)
    return [round(left + i * step, 2) for i in range(count)]


def _grid(height: int) -> list[dict[str, float | str]]:
    return [{"y": _y(value, height), "label": f"{value:g}"} for value in GRID]


def emotion_chart(points: Sequence[EmotionPoint]) -> dict[str, Any] | None:
    """Markers and the line joining them, oldest first; None without any point."""
    if not points:
        return None
    xs = _xs(len(points), inset=LABEL_INSET)
    markers = [
        {
            "x": x,
            "y": _y(p.intensity, EMOTION_HEIGHT),
            "label_y": round(_y(p.intensity, EMOTION_HEIGHT) - 8, 2),
            "at": p.at,
            "emotion": p.emotion,
            "intensity": p.intensity,
            "context": p.context,
        }
        for x, p in zip(xs, points, strict=True)
    ]
    return {
        "width": WIDTH,
        "height": EMOTION_HEIGHT,
        "left": LEFT,
        "right": WIDTH - RIGHT,
        "grid": _grid(EMOTION_HEIGHT),
        "points": " ".join(f"{m['x']},{m['y']}" for m in markers),
        "markers": markers,
        "labelled": len(markers) <= LABELLED_POINTS,
        "first": points[0].at,
        "last": points[-1].at,
    }


def trait_chart(snapshots: Sequence[TraitSnapshotPoint], traits: Sequence[str]) -> dict[str, Any] | None:
    """One polyline per trait (in ``traits`` order, so each keeps its colour class ``trait-N``);
    a single snapshot draws flat lines across. None without any snapshot."""
    if not snapshots:
        return None
    xs = _xs(len(snapshots))
    if len(xs) == 1:
        xs = [float(LEFT), float(WIDTH - RIGHT)]
        snapshots = [snapshots[0], snapshots[0]]
    lines = []
    for index, trait in enumerate(traits):
        values = [s.traits.get(trait) for s in snapshots]
        coordinates = [f"{x},{_y(v, TRAIT_HEIGHT)}" for x, v in zip(xs, values, strict=True) if v is not None]
        lines.append({"trait": trait, "index": index, "points": " ".join(coordinates), "last": values[-1]})
    return {
        "width": WIDTH,
        "height": TRAIT_HEIGHT,
        "left": LEFT,
        "right": WIDTH - RIGHT,
        "grid": _grid(TRAIT_HEIGHT),
        "lines": lines,
        "ticks": [{"x": x, "at": s.at, "reason": s.reason} for x, s in zip(xs, snapshots, strict=True)],
        "first": snapshots[0].at,
        "last": snapshots[-1].at,
        "count": len({s.at for s in snapshots}),
    }
