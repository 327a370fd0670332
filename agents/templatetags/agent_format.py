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
    """What a step recorded beyond when, what and who, as (name, value) pairs."""
    return sorted((key, value) for key, value in step.items() if key not in STEP_FIELDS)
