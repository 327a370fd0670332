"""A KPI trend as an inline SVG polyline, drawn on the server: no chart library, no JS.

``chart_geometry`` is pure (numbers in, coordinates out) so it is tested without a template.
"""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()

WIDTH, HEIGHT, PAD = 160, 40, 3


def _scale(value: float, low: float, high: float) -> float:
    """y of ``value``, top of the box for ``high``; a flat series sits in the middle."""
    if high == low:
        return HEIGHT / 2
    return round(PAD + (high - value) / (high - low) * (HEIGHT - 2 * PAD), 2)


def chart_geometry(
    points: list[tuple[str, float]], warning: float | None = None, critical: float | None = None, width: int = WIDTH
) -> dict[str, Any]:
    """Map (day, value) points, oldest first, to SVG coordinates.

    The vertical range covers the warning threshold too, so the distance to it reads at a
    glance; the critical line is drawn only when it falls inside that range (a far-away critical
    threshold would squash the line flat). One point becomes a flat segment.
    """
    values = [value for _, value in points]
    bounds = [*values, *([] if warning is None else [warning])]
    low, high = min(bounds), max(bounds)
    if len(values) == 1:
        xs = [float(PAD), float(width - PAD)]
        values = values * 2
    else:
        step = (width - 2 * PAD) / (len(values) - 1)
        xs = [round(PAD + i * step, 2) for i in range(len(values))]
    return {
        "width": width,
        "height": HEIGHT,
        "points": " ".join(f"{x},{_scale(v, low, high)}" for x, v in zip(xs, values, strict=True)),
        "warning_y": None if warning is None else _scale(warning, low, high),
        "critical_y": _scale(critical, low, high) if critical is not None and low <= critical <= high else None,
        "first": points[0][0],
        "last": points[-1][0],
    }


@register.inclusion_tag("agents/partials/sparkline.html")
def kpi_sparkline(kpi: dict[str, Any]) -> dict[str, Any]:
    """``{% kpi_sparkline kpi %}`` for one row of the KPI report (with its ``trend``)."""
    if not kpi["trend"]:
        return {"chart": None, "kpi": kpi}
    return {"chart": chart_geometry(kpi["trend"], kpi["threshold_warning"], kpi["threshold_critical"]), "kpi": kpi}
