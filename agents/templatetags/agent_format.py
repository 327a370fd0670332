"""Display filters for the JSON parts of jobs (envelope, output, escalation steps), and the labels
of registry values (an agent's role and domain)."""

from __future__ import annotations

import json
from typing import Any

from django import template

from agents import registries
from agents.vocabulary import Registry

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


@register.simple_tag(takes_context=True)
def value_label(context: template.Context, registry: str, value: str) -> str:
    """The label of ``value`` in ``registry`` (``{% value_label "roles" agent.role %}``): the
    registries are read once per rendering, however many rows ask; a value the registry does not
    have shows as itself, none as a dash."""
    if not value:
        return "—"
    labels = context.render_context.get("registry_labels")
    if labels is None:
        labels = context.render_context["registry_labels"] = registries.labels()
    return labels.get(Registry(registry).value, {}).get(value, value)


@register.filter
def label_of(labels: dict[str, str] | None, value: str) -> str:
    """``{{ form.labels.roles|label_of:agent.role }}``: a value's label from labels a view read
    already (a list page: no query per row); the value itself when unlabelled, a dash when empty."""
    if not value:
        return "—"
    return (labels or {}).get(value, value)
