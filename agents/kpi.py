"""KPI rating and retry backoff: small formulas, pure."""

from __future__ import annotations

from agents.manifest import KpiDirection


def kpi_status(value: float | None, warning: float, critical: float, direction: str) -> str:
    """ok / warning / critical / no_data. Reaching a threshold counts: a success rate of exactly
    0.85 with warning 0.85 is a warning."""
    if value is None:
        return "no_data"
    if direction == KpiDirection.HIGHER_IS_BETTER:
        if value <= critical:
            return "critical"
        return "warning" if value <= warning else "ok"
    if value >= critical:
        return "critical"
    return "warning" if value >= warning else "ok"


# The KPIs the platform measures from its jobs itself (seed 001), whatever a result says.
DERIVED_SUCCESS_METRIC = "task_success_rate"
DERIVED_DURATION_METRIC = "avg_processing_time"
DERIVED_ESCALATION_METRIC = "escalation_rate"
DERIVED_METRICS = frozenset({DERIVED_SUCCESS_METRIC, DERIVED_DURATION_METRIC, DERIVED_ESCALATION_METRIC})

STATUS_SEVERITY = {"critical": 3, "warning": 2, "ok": 1, "no_data": 0}


def worst(statuses: list[str]) -> str:
    return max(statuses, key=STATUS_SEVERITY.__getitem__, default="no_data")


def backoff_seconds(attempt: int, base: int, strategy: str) -> int:
    """Delay before retry number ``attempt`` (1-based): base, 2*base, 4*base... or base*attempt."""
    if strategy == "linear":
        return base * attempt
    delay: int = base * 2 ** (attempt - 1)  # typeshed: int ** int is Any (a float below 0); attempts start at 1
    return delay
