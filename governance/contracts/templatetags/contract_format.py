"""Display filters of the contract pages: rates as percentages, constraints in words."""

from __future__ import annotations

from typing import Any

from django import template

from governance.contracts import reports as contract_reports

register = template.Library()


@register.filter
def percent(rate: float | None) -> str:
    """0.9312 -> "93.1%"; no rate (no checks in the window) -> "—"."""
    return contract_reports.percent(rate)


@register.filter
def constraint_words(constraints: dict[str, Any]) -> str:
    return contract_reports.constraint_words(constraints or {})


@register.filter
def grouped_violations(violations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return contract_reports.grouped_violations(violations or [])


GOOD_RATE, FAIR_RATE = 0.95, 0.8  # compliance colours only: nothing is decided on them


@register.filter
def rate_class(rate: float | None) -> str:
    """A CSS class for a compliance rate, so a bad contract stands out in a long table."""
    if rate is None:
        return "rate-none"
    return "rate-ok" if rate >= GOOD_RATE else "rate-warn" if rate >= FAIR_RATE else "rate-bad"


@register.filter
def violation_class(rate: float | None) -> str:
    """The same colours for a violation rate (its complement)."""
    return rate_class(None if rate is None else 1 - rate)
