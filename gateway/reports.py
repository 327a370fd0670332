"""What the gateway's operator pages show: each upstream's last day of calls, the upstream tools an
agent's manifest grants, calls, refusals and latency per tool over a window, and the call log as
CSV.

Every figure is an aggregate computed by PostgreSQL (counts with ``FILTER``, latency percentiles
with ``percentile_cont``), so a page costs the same number of queries with ten calls or ten
million. Callers pass the log already scoped by ``GatewayCall.objects.visible_to``.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any

from django.db.models import Aggregate, Count, FloatField, Q, QuerySet
from django.db.models.functions import TruncDate
from django.utils import timezone

from agents.models import Agent, ManifestTool
from agents.registry import manifest_tools
from gateway.forwarding import split
from gateway.models import GatewayCall, UpstreamServer

ACTIVITY_HOURS = 24
CSV_COLUMNS = [
    "called_at",
    "agent",
    "tool_id",
    "server",
    "job",
    "session",
    "outcome",
    "refusal",
    "error_class",
    "latency_ms",
    "arguments_hash",
    "arguments",
]
# Spreadsheets run cells starting with these as formulas; tool ids, refusals and error classes
# come from agents and upstreams.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
Outcome = GatewayCall.Outcome
FAILED = (Outcome.TOOL_ERROR, Outcome.UPSTREAM_FAILED)


class Percentile(Aggregate):
    """``percentile_cont(fraction) WITHIN GROUP (ORDER BY expr)``: PostgreSQL's continuous
    percentile (NULLs ignored, so calls that were never forwarded do not count)."""

    function = "PERCENTILE_CONT"
    template = "%(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()

    def __init__(self, expression: str, fraction: float, **extra: Any) -> None:
        if not 0 <= fraction <= 1:
            raise ValueError("A percentile's fraction is between 0 and 1.")
        super().__init__(expression, fraction=float(fraction), **extra)


def _figures() -> dict[str, Aggregate]:
    """The figures every report shows, for ``aggregate()`` or ``annotate()``."""
    return {
        "calls": Count("id"),
        "ok": Count("id", filter=Q(outcome=Outcome.OK)),
        "refused": Count("id", filter=Q(outcome=Outcome.REFUSED)),
        "failed": Count("id", filter=Q(outcome__in=FAILED)),
        "p50": Percentile("latency_ms", 0.5),
        "p95": Percentile("latency_ms", 0.95),
    }


@dataclass(frozen=True)
class Figures:
    calls: int = 0
    ok: int = 0
    refused: int = 0
    failed: int = 0
    p50: float | None = None
    p95: float | None = None

    @classmethod
    def of(cls, row: dict[str, Any]) -> Figures:
        return cls(**{name: row[name] for name in _figures()})


# --- Upstream servers ----------------------------------------------------------------------------


def server_activity(calls: QuerySet[GatewayCall], now: datetime | None = None) -> dict[int, Figures]:
    """Each server's calls of the last ``ACTIVITY_HOURS`` hours, by server id: one query."""
    since = (now or timezone.now()) - timedelta(hours=ACTIVITY_HOURS)
    rows = calls.filter(called_at__gte=since, server__isnull=False).order_by().values("server_id")
    return {row["server_id"]: Figures.of(row) for row in rows.annotate(**_figures())}


# --- One agent's grants --------------------------------------------------------------------------


@dataclass(frozen=True)
class GrantRow:
    tool: ManifestTool
    server_name: str
    tool_name: str
    server: UpstreamServer | None  # None: no upstream of that name is registered

    @property
    def reachable(self) -> bool:
        """Whether the gateway offers it: its upstream is registered and enabled."""
        return self.server is not None and self.server.enabled


def granted_tools(agent: Agent) -> list[GrantRow]:
    """The upstream tools the agent's active manifest grants, with the upstream each names: one
    query (a manifest's tool rows are read once per process). Grants on unknown or disabled
    servers are listed too (the gateway does not offer them; an operator should see why)."""
    if agent.active_manifest_id is None:
        return []
    rows = sorted(manifest_tools(agent.active_manifest_id).values(), key=lambda row: row.tool_id)
    named = [(row, parts) for row in rows if (parts := split(row.tool_id)) is not None]
    servers = UpstreamServer.objects.in_bulk({parts[0] for _, parts in named}, field_name="name") if named else {}
    return [GrantRow(row, parts[0], parts[1], servers.get(parts[0])) for row, parts in named]


# --- Per tool ------------------------------------------------------------------------------------


def start_of(day: date) -> datetime:
    """The first instant of a local day."""
    return timezone.make_aware(datetime.combine(day, time.min))


def first_day(days: int, today: date | None = None) -> date:
    """The first day of a window of ``days`` days ending today (local dates)."""
    return (today or timezone.localdate()) - timedelta(days=days - 1)


def _chart(label: str, trend: list[tuple[str, float]], total: str) -> dict[str, Any]:
    """A series in the shape the KPI sparkline reads (``kpi_charts.kpi_sparkline``)."""
    return {"metric_id": label, "trend": trend, "total": total, "threshold_warning": None, "threshold_critical": None}


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f} ms"


@dataclass
class Series:
    """Per day, oldest first: calls and refusals (0 on a quiet day, so lines read as time) and
    the p95 latency of the days that had a forwarded call."""

    days: list[date]
    calls: dict[date, int] = field(default_factory=dict)
    refused: dict[date, int] = field(default_factory=dict)
    p95: dict[date, float] = field(default_factory=dict)

    def add(self, row: dict[str, Any]) -> None:
        self.calls[row["day"]] = row["calls"]
        self.refused[row["day"]] = row["refused"]
        if row["p95"] is not None:
            self.p95[row["day"]] = round(row["p95"], 1)

    def charts(self, figures: Figures) -> list[dict[str, Any]]:
        calls = [(day.isoformat(), float(self.calls.get(day, 0))) for day in self.days]
        refused = [(day.isoformat(), float(self.refused.get(day, 0))) for day in self.days]
        p95 = [(day.isoformat(), value) for day in self.days if (value := self.p95.get(day)) is not None]
        return [
            _chart("Calls", calls, str(figures.calls)),
            _chart("Refusals", refused, str(figures.refused)),
            _chart("Latency p95 (ms)", p95, _ms(figures.p95)),
        ]


@dataclass(frozen=True)
class ToolRow:
    tool_id: str
    figures: Figures
    charts: list[dict[str, Any]]


@dataclass(frozen=True)
class ToolReport:
    since: date
    days: int
    figures: Figures
    charts: list[dict[str, Any]]
    tools: list[ToolRow]


def tool_report(calls: QuerySet[GatewayCall], days: int, today: date | None = None) -> ToolReport:
    """Calls, refusals, failures and latency of the window, for the whole gateway and per tool
    (most called first), with their daily series: four queries, whatever the log's size."""
    since = first_day(days, today)
    window = calls.filter(called_at__gte=start_of(since)).order_by()
    all_days = [since + timedelta(days=n) for n in range(days)]
    daily = window.annotate(day=TruncDate("called_at"))
    figures = Figures.of(window.aggregate(**_figures()))
    fleet = Series(all_days)
    for row in daily.values("day").annotate(**_figures()):
        fleet.add(row)
    per_tool: dict[str, Series] = {}
    for row in daily.values("tool_id", "day").annotate(**_figures()):
        per_tool.setdefault(row["tool_id"], Series(all_days)).add(row)
    totals = [(row["tool_id"], Figures.of(row)) for row in window.values("tool_id").annotate(**_figures())]
    totals.sort(key=lambda item: (-item[1].calls, item[0]))
    rows = [ToolRow(tool_id, found, per_tool[tool_id].charts(found)) for tool_id, found in totals]
    return ToolReport(since, days, figures, fleet.charts(figures), rows)


# --- CSV -----------------------------------------------------------------------------------------


class _Echo:
    """The csv module writes to a file; this "file" hands each line back to the stream."""

    def write(self, value: str) -> str:
        return value


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def _row(call: GatewayCall) -> list[Any]:
    arguments = "" if call.arguments is None else json.dumps(call.arguments, sort_keys=True, ensure_ascii=False)
    return [
        call.called_at.isoformat(),
        _cell(call.agent.agent_id),
        _cell(call.tool_id),
        call.server.name if call.server else "",
        call.job_id or "",
        call.session_id or "",
        call.outcome,
        _cell(call.refusal),
        _cell(call.error_class),
        "" if call.latency_ms is None else call.latency_ms,
        call.arguments_hash,
        _cell(arguments),
    ]


def csv_lines(calls: QuerySet[GatewayCall]) -> Iterator[str]:
    """The calls as CSV lines, header first, newest first, read in chunks so the export stays
    flat in memory. ``arguments`` is empty unless the gateway stored them
    (``GATEWAY_STORE_ARGUMENTS``)."""
    writer = csv.writer(_Echo())
    yield writer.writerow(CSV_COLUMNS)
    rows: Iterable[GatewayCall] = calls.select_related("agent", "server").iterator(chunk_size=500)
    for call in rows:
        yield writer.writerow(_row(call))
