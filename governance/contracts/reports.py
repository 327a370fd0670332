"""What the contract pages and their exports show: the catalog with its compliance, one
contract's report, one agent's and the fleet's rankings, and the Markdown/CSV of those reports.

Every figure comes from the daily aggregates (ContractDailyStat, ContractViolationStat) through
``contracts.stats`` and ``contracts.ranking``, so a report costs the same with a thousand checks
or a hundred million. The only read of the checks table is the handful of recent failing
examples, served by its ``(contract_name, -checked_at)`` index and LIMITed.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from django.db.models import Count, Q, QuerySet, Sum
from django.utils import timezone

from governance.contracts import services as contracts
from governance.contracts import spec as contract_spec
from governance.contracts.models import Contract, ContractCheck, ContractDailyStat, ContractField

_INDEX = re.compile(r"\[\d+\]")
SHOWN_PATHS = 3  # concrete paths listed for one grouped violation; the rest are counted
REPORT_DAYS = 30  # the default window of every report: today and the 29 days before
TOP_PATHS = 10
MAX_CHART_DAYS = 366
RECENT_EXAMPLES = 5
# Spreadsheets run cells starting with these as formulas; agent ids and paths come from outside.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_CONSTRAINT_WORDS = {
    "non_empty": "non-empty",
    "enum_open": "other values warn",
    "existing": "must name a known id",
    "serializable": "JSON-serialisable",
    "other_fields": "other fields allowed",
    "whole_output": "the whole output",
}


def default_since(today: date | None = None) -> date:
    """The first day of the default report window."""
    return (today or timezone.localdate()) - timedelta(days=REPORT_DAYS - 1)


def _start_of(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


# --- Catalog -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CatalogRow:
    contract: Contract
    fields: int
    checks: int
    compliance_rate: float | None


def sections() -> list[str]:
    """The sections of the current catalog, for the filter."""
    found = Contract.objects.filter(is_current=True).values_list("section", flat=True)
    return sorted(set(found))


def current_contracts(*, q: str = "", section: str = "") -> QuerySet[Contract]:
    """Current versions matching the search (name or module) and section, with their field count."""
    found = Contract.objects.filter(is_current=True)
    if q:
        found = found.filter(Q(name__icontains=q) | Q(module__icontains=q))
    if section:
        found = found.filter(section=section)
    return found.annotate(field_count=Count("fields")).order_by("section", "name")


def catalog(*, q: str = "", section: str = "", since: date | None = None) -> list[CatalogRow]:
    """The catalog table: two queries whatever its length. Without ``since`` (a reader who may
    not see the audit) no compliance is read."""
    found = list(current_contracts(q=q, section=section))
    totals: dict[str, dict[str, int]] = {}
    if since is not None and found:
        daily = ContractDailyStat.objects.filter(day__gte=since, contract_name__in=[c.name for c in found])
        totals = {
            row["contract_name"]: row
            for row in daily.values("contract_name").annotate(checks=Sum("checks"), compliant=Sum("compliant"))
        }
    rows = []
    for contract in found:
        total = totals.get(contract.name, {"checks": 0, "compliant": 0})
        rate = round(total["compliant"] / total["checks"], 4) if total["checks"] else None
        rows.append(CatalogRow(contract, contract.field_count, total["checks"], rate))
    return rows


def notes(contract: Contract) -> list[tuple[str, str]]:
    """The catalog's notes as (label, text): stored as "Label: text" paragraphs."""
    found = []
    for note in filter(None, contract.notes.split("\n\n")):
        label, _, body = note.partition(": ")
        found.append((label, body) if body else ("", label))
    return found


def constraint_words(constraints: dict[str, Any]) -> str:
    """A field's checkable constraints in a few words: "in [0, 1]", "one of ok, refused, error"."""
    words = []
    low, high = constraints.get("minimum"), constraints.get("maximum")
    if low is not None or high is not None:
        words.append(f"in [{_number(low)}, {_number(high)}]")
    if constraints.get("enum"):
        words.append("one of " + ", ".join(map(str, constraints["enum"])))
    if constraints.get("keys"):
        words.append("keys " + ", ".join(map(str, constraints["keys"])))
    words += [text for key, text in _CONSTRAINT_WORDS.items() if constraints.get(key)]
    return "; ".join(words)


def _number(value: float | None) -> str:
    if value is None:
        return "…"
    return str(int(value)) if float(value).is_integer() else str(value)


# --- Reports -------------------------------------------------------------------------------------


def _with_rates(found: contracts.Stats) -> contracts.Stats:
    """Each day of ``per_day`` with its compliance ``rate`` too, for the per-day tables."""
    for day in found.per_day:
        day["rate"] = day["compliant"] / day["checks"] if day["checks"] else None
    return found


def _chart(label: str, trend: list[tuple[str, float]], total: str) -> dict[str, Any]:
    """A series in the shape the KPI sparkline reads (``agents`` templatetag ``kpi_sparkline``)."""
    return {"metric_id": label, "trend": trend, "total": total, "threshold_warning": None, "threshold_critical": None}


def charts(per_day: list[dict[str, Any]], since: date, today: date | None = None) -> list[dict[str, Any]]:
    """Compliance rate of the days that had checks (a day without checks has no rate), then
    checks and non-compliant checks per day (days without checks count 0, so lines read as time)."""
    today = today or timezone.localdate()
    counted = {row["day"]: (row["checks"], row["checks"] - row["compliant"]) for row in per_day}
    if (today - since).days >= MAX_CHART_DAYS and counted:  # a long window is drawn from its first check
        since = max(since, min(counted))
    days = [since + timedelta(days=n) for n in range((today - since).days + 1)]
    rated = [
        (row["day"].isoformat(), round(100 * row["compliant"] / row["checks"], 1)) for row in per_day if row["checks"]
    ]
    checks = [(day.isoformat(), float(counted.get(day, (0, 0))[0])) for day in days]
    failed = [(day.isoformat(), float(counted.get(day, (0, 0))[1])) for day in days]
    total = sum(checks for checks, _ in counted.values())
    broken = sum(failed for _, failed in counted.values())
    return [
        _chart("Compliance rate (%)", rated, percent((total - broken) / total if total else None)),
        _chart("Checks", checks, str(total)),
        _chart("Non-compliant checks", failed, str(broken)),
    ]


def percent(rate: float | None) -> str:
    """0.9312 -> "93.1%"; no rate (no checks) -> "—"."""
    return "—" if rate is None else f"{100 * rate:.1f}%"


def grouped_violations(violations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per (path pattern, code) of a check: a list of six string ids is one problem
    said once (with its hint and effect), not six times."""
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for violation in violations:
        key = (_INDEX.sub("[*]", violation["path"]), violation["code"])
        if key not in groups:
            groups[key] = {**violation, "pattern": key[0], "paths": []}
        groups[key]["paths"].append(violation["path"])
    for group in groups.values():
        group["more"] = max(0, len(group["paths"]) - SHOWN_PATHS)
        group["paths"] = group["paths"][:SHOWN_PATHS]
    return list(groups.values())


@dataclass
class ContractReport:
    name: str
    since: date
    stats: contracts.Stats
    charts: list[dict[str, Any]]
    examples: list[ContractCheck]


def failing_examples(name: str, since: date, limit: int = RECENT_EXAMPLES) -> list[ContractCheck]:
    """The newest failing checks of a contract in the window: the one read of the checks table,
    by its (contract_name, -checked_at) index, LIMITed."""
    return list(
        ContractCheck.objects.filter(contract_name=name, compliant=False, checked_at__gte=_start_of(since))
        .select_related("contract", "agent")
        .order_by("-checked_at")[:limit]
    )


def contract_report(name: str, since: date, *, examples: int = RECENT_EXAMPLES) -> ContractReport:
    found = _with_rates(contracts.stats(contract_name=name, since=since, top=TOP_PATHS))
    return ContractReport(name, since, found, charts(found.per_day, since), failing_examples(name, since, examples))


@dataclass
class FleetReport:
    since: date
    stats: contracts.Stats
    charts: list[dict[str, Any]]
    contracts: list[dict[str, Any]]
    agents: list[dict[str, Any]]


def fleet_report(since: date) -> FleetReport:
    found = _with_rates(contracts.stats(since=since, top=0))
    return FleetReport(
        since=since,
        stats=found,
        charts=charts(found.per_day, since),
        contracts=contracts.ranking("contract_name", since=since),
        agents=contracts.ranking("agent_label", since=since),
    )


@dataclass
class AgentReport:
    agent_label: str
    since: date
    stats: contracts.Stats
    charts: list[dict[str, Any]]
    contracts: list[dict[str, Any]]


def agent_report(agent_label: str, since: date) -> AgentReport:
    found = _with_rates(contracts.stats(agent_label=agent_label, since=since))
    return AgentReport(
        agent_label=agent_label,
        since=since,
        stats=found,
        charts=charts(found.per_day, since),
        contracts=contracts.ranking("contract_name", since=since, agent_label=agent_label),
    )


# --- Spec audit ----------------------------------------------------------------------------------


@dataclass
class SpecAuditResult:
    contract: Contract
    kind: str  # "schema" or "example"
    audit: contract_spec.SpecAudit

    @property
    def problems(self) -> int:
        return len(self.audit.missing_required) + len(self.audit.unknown_fields) + len(self.audit.type_mismatches)


def spec_audit(contract: Contract, document: Any) -> SpecAuditResult:
    """Compare what a prompt declares (JSON Schema or example answer) with the contract's rules."""
    kind = "schema" if contract_spec.is_schema(document) else "example"
    return SpecAuditResult(contract, kind, contract_spec.audit(contracts.rules(contract.pk), document))


# --- Exports -------------------------------------------------------------------------------------


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def _csv(rows: Iterable[Iterable[Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerows([_cell(value) for value in row] for row in rows)
    return buffer.getvalue()


def _md(value: Any) -> str:
    """A Markdown table cell: pipes escaped, one line."""
    return " ".join(str(value).replace("|", "\\|").split())


def _md_table(header: list[str], rows: Iterable[Iterable[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(_md(value) for value in row) + " |" for row in rows]
    return lines


def _rate(compliant: int, checks: int) -> str:
    return f"{compliant / checks:.4f}" if checks else ""


CONTRACT_CSV_HEADER = [
    "row",
    "day",
    "path",
    "code",
    "checks",
    "compliant",
    "compliance_rate",
    "count",
    "expected_type",
    "required",
    "runtime_effect",
]
_NO_ROW = ("", "", "")


def violated_rows(name: str) -> dict[str, tuple[str, str, str]]:
    """Per path pattern of the current version of a contract (each alternative too): seed 000's
    columns of its row, as the catalog writes them: Type attendu, Obligatoire, Effet runtime. What a
    report's reader needs to know what a violation costs. One query."""
    described: dict[str, tuple[str, str, str]] = {}
    for field in ContractField.objects.filter(contract__name=name, contract__is_current=True).order_by("position"):
        for path in (field.path, *field.alternatives):
            described.setdefault(path, (field.type_text, field.required_text, field.effect))
    return described


def _row_of(described: dict[str, tuple[str, str, str]], path: str) -> tuple[str, str, str]:
    return described.get(_INDEX.sub("[*]", path), _NO_ROW)


def contract_csv(report: ContractReport) -> str:
    """One table: a ``total`` row, one ``day`` row per day with checks, one ``violation`` row per
    top (path, code) of the window with the violated row's expected type, requirement and runtime
    effect (empty for a path the contract does not have, such as an unknown field)."""
    found = report.stats
    described = violated_rows(report.name)
    rows: list[list[Any]] = [CONTRACT_CSV_HEADER]
    total = _rate(found.compliant, found.checks)
    rows.append(["total", "", "", "", found.checks, found.compliant, total, "", *_NO_ROW])
    rows += [
        [
            "day",
            d["day"].isoformat(),
            "",
            "",
            d["checks"],
            d["compliant"],
            _rate(d["compliant"], d["checks"]),
            "",
            *_NO_ROW,
        ]
        for d in found.per_day
    ]
    rows += [
        ["violation", "", p["path"], p["code"], "", "", "", p["count"], *_row_of(described, p["path"])]
        for p in found.top_paths
    ]
    return _csv(rows)


def contract_markdown(report: ContractReport) -> str:
    """The report with every violation described by its row of seed 000: expected type,
    requirement and runtime effect."""
    found = report.stats
    described = violated_rows(report.name)
    lines = [
        f"# Contract report: `{report.name}`",
        "",
        f"Since {report.since.isoformat()} (from the daily aggregates).",
        "",
        f"- Checks: {found.checks}",
        f"- Compliant: {found.compliant}",
        f"- Compliance rate: {percent(found.compliance_rate)}",
        f"- Violations: {found.violations}",
        "",
        "## Compliance per day",
        "",
        *_md_table(
            ["Day", "Checks", "Compliant", "Compliance rate"],
            [
                [d["day"].isoformat(), d["checks"], d["compliant"], percent(d["compliant"] / d["checks"])]
                for d in found.per_day
                if d["checks"]
            ],
        ),
        "",
        "## Top violating paths",
        "",
        *_md_table(
            ["Path", "Code", "Count", "Expected type", "Required", "Runtime effect"],
            [[f"`{p['path']}`", p["code"], p["count"], *_row_of(described, p["path"])] for p in found.top_paths],
        ),
    ]
    if report.examples:
        lines += ["", "## Recent failing outputs", ""]
        for check in report.examples:
            who = check.agent.agent_id if check.agent else check.submitted_by
            lines += [f"### {check.checked_at:%Y-%m-%d %H:%M} · {who} · v{check.contract.version}", ""]
            for group in grouped_violations(check.violations):
                paths = ", ".join(f"`{path}`" for path in group["paths"])
                more = f" and {group['more']} more" if group["more"] else ""
                lines.append(f"- {paths}{more} {group['code']}: {group['message']}")
                expected, required, effect = _row_of(described, group["pattern"])
                if expected or required or effect:
                    lines.append(f"  (expected: {expected}; required: {required}; runtime effect: {effect})")
            if check.output is not None:
                output = json.dumps(check.output, indent=2, ensure_ascii=False, sort_keys=True)
                lines += ["", "```json", output, "```"]
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


FLEET_CSV_HEADER = ["row", "name", "checks", "compliant", "violations", "violation_rate"]


def _ranked_row(kind: str, name: str, row: dict[str, Any]) -> list[Any]:
    return [kind, name, row["checks"], row["compliant"], row["violations"], f"{row['violation_rate']:.4f}"]


def fleet_csv(report: FleetReport) -> str:
    """Contracts then agents, each ranked worst first by violation rate."""
    rows: list[list[Any]] = [FLEET_CSV_HEADER]
    rows += [_ranked_row("contract", r["contract_name"], r) for r in report.contracts]
    rows += [_ranked_row("agent", r["agent_label"], r) for r in report.agents]
    return _csv(rows)


def fleet_markdown(report: FleetReport) -> str:
    found = report.stats
    header = ["Checks", "Compliant", "Violations", "Violation rate"]

    def ranked(rows: list[dict[str, Any]], key: str) -> list[list[Any]]:
        return [
            [f"`{r[key]}`", r["checks"], r["compliant"], r["violations"], percent(r["violation_rate"])] for r in rows
        ]

    lines = [
        "# Fleet contract report",
        "",
        f"Since {report.since.isoformat()} (from the daily aggregates).",
        "",
        f"- Checks: {found.checks}",
        f"- Compliance rate: {percent(found.compliance_rate)}",
        f"- Violations: {found.violations}",
        "",
        "## Contracts by violation rate",
        "",
        *_md_table(["Contract", *header], ranked(report.contracts, "contract_name")),
        "",
        "## Agents by violation rate",
        "",
        *_md_table(["Agent", *header], ranked(report.agents, "agent_label")),
    ]
    return "\n".join(lines) + "\n"
