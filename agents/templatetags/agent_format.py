"""Display filters for the JSON parts of jobs (envelope, output, escalation steps)."""

from __future__ import annotations

import json
from typing import Any

from django import template

register = template.Library()

STEP_FIELDS = ("at", "action", "by")


@register.filter
def pretty_json(value: Any) -> str:
    """Indented, key-sorted JSON (autoescaped by the template like any string)."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


@register.filter
def step_detail(step: dict[str, Any]) -> list[tuple[str, Any]]:
    """What a step recorded beyond when, what and who, as (name, text) pairs; lists and objects
    as JSON, so they read the same as in the API and the artifacts."""
    return sorted(
        (key, value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str))
        for key, value in step.items()
        if key not in STEP_FIELDS
    )


@register.filter
def kpi_number(value: float | None) -> str:
    """At most three decimals, without trailing zeros: 0.95, 5000, 6047.6."""
    if value is None:
        return ""
    return f"{value:.3f}".rstrip("0").rstrip(".")
