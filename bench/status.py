"""Where performance stands: the table that opens ``bench/README.md``, from the latest run of every
target in ``bench/results/``. A helper, not a benchmark (it has no ``run``).

Each results file is the latest run of its benchmark (a run replaces it); a target in several
files is taken from the newest. Runs of machines no longer used are in ``bench/results/history/``
and are not read. The figure of a target is the one its name carries in parentheses, or the one
``FIGURES`` names in the results; the machine, the load before and after, the commit and the date
are the run's own (``machine`` of bench/common.py).

Run: ``python -m bench.status`` (rewrites the table in bench/README.md and prints it).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import RESULTS_DIR

README = Path(__file__).with_name("README.md")
BEGIN, END = "<!-- status:begin -->", "<!-- status:end -->"
IN_PARENTHESES = re.compile(r"\(([^()]*\d[^()]*)\)\s*$")
# Targets whose name does not carry their figure: where the results keep it (keys, list indexes).
FIGURES: dict[str, tuple[str | int, ...]] = {
    "gateway p95 overhead < 5 ms at 1 client(s)": ("ratios", "gateway_p95_overhead_ms@1"),
    "gateway p95 overhead < 10 ms at 8 client(s)": ("ratios", "gateway_p95_overhead_ms@8"),
    "gateway throughput >= 50% of direct at 1 client(s)": ("ratios", "gateway_rps_vs_direct@1"),
    "gateway throughput >= 50% of direct at 8 client(s)": ("ratios", "gateway_rps_vs_direct@8"),
    "p95 overhead < 5 ms at 1 client(s)": ("ratios", "mcp_p95_overhead_ms@1"),
    "p95 overhead < 5 ms at 8 client(s)": ("ratios", "mcp_p95_overhead_ms@8"),
    "throughput >= 50% of REST at 1 client(s)": ("ratios", "mcp_rps_vs_rest@1"),
    "throughput >= 50% of REST at 8 client(s)": ("ratios", "mcp_rps_vs_rest@8"),
    "create p95 < 50 ms": ("phases", "create", "p95_ms"),
    "create throughput >= 50% of bare": ("ratios", "create_rps_vs_bare"),
    "processor >= 200 events/s": ("events", "platform", "events_per_s"),
    "first tick < 1 s at 10000 agents": ("ticks", -1, "first", "seconds"),
    "steady tick < 1 s at 10000 agents": ("ticks", -1, "steady_median_s"),
}


@dataclass(frozen=True)
class Line:
    benchmark: str
    target: str
    figure: str
    met: bool
    machine: str
    load: str
    commit: str
    date: str


def _carried(name: str) -> re.Match[str] | None:
    """The figure a target's name ends with in parentheses; not a bound or a reference there
    ("(ratio <= 10)", "(issue 18)"), which belong to the target."""
    found = IN_PARENTHESES.search(name)
    return found if found and not re.search(r"[<>=]|^issue ", found.group(1)) else None


def _figure(name: str, result: dict[str, Any]) -> str:
    found = _carried(name)
    if found:
        return found.group(1)
    value: Any = result
    for key in FIGURES.get(name, ("-",)):
        if isinstance(key, int):
            value = value[key] if isinstance(value, list) and -len(value) <= key < len(value) else None
        else:
            value = value.get(key) if isinstance(value, dict) else None
    return "" if value is None else str(value)


def _machine(machine: dict[str, Any]) -> str:
    cpu = machine.get("cpu_model") or "CPU model not recorded"
    return f"{machine.get('cpu_count', '?')} cores, {cpu}"


def _load(machine: dict[str, Any]) -> str:
    before, after = machine.get("loadavg_before") or ["?"], machine.get("loadavg_after") or ["?"]
    return f"{before[0]} / {after[0]}"


def lines(results: Path = RESULTS_DIR) -> list[Line]:
    """The latest line of every target in ``results`` (history not read)."""
    latest: dict[str, Line] = {}
    for path in sorted(results.glob("*.json")):
        result = json.loads(path.read_text())
        machine = result.get("machine") or {}
        for name, met in (result.get("targets") or {}).items():
            carried = _carried(name)
            key = name[: carried.start()].strip() if carried else name
            line = Line(
                benchmark=path.stem,
                target=key,
                figure=_figure(name, result),
                met=bool(met),
                machine=_machine(machine),
                load=_load(machine),
                commit=str(machine.get("git_commit", ""))[:8],
                date=str(machine.get("timestamp", ""))[:10],
            )
            if key not in latest or line.date >= latest[key].date:
                latest[key] = line
    return sorted(latest.values(), key=lambda line: (line.met, line.benchmark, line.target))


def not_run_here(results: Path = RESULTS_DIR) -> list[str]:
    """The benchmarks whose only runs are in the history (machines no longer used)."""
    current = {path.stem for path in results.glob("*.json")}
    return sorted(path.stem for path in (results / "history").glob("*.json") if path.stem not in current)


def table(found: list[Line], older: list[str]) -> str:
    missed = sum(1 for line in found if not line.met)
    head = [
        f"{len(found)} targets in the latest results, {missed} missed (missed first). "
        "Load: the 1-minute load average before / after the run. `python -m bench.status` rewrites this table.",
        "",
        "| benchmark | target | figure | | machine | load | commit | date |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rows = [
        f"| {line.benchmark} | {line.target} | {line.figure} | {'met' if line.met else '**missed**'} | "
        f"{line.machine} | {line.load} | {line.commit} | {line.date} |"
        for line in found
    ]
    tail = (
        [
            "",
            "Not run on the current machine, so not in the table: "
            + ", ".join(f"`{name}`" for name in older)
            + ". Their last runs, on machines no longer used, are in `results/history/` (and the Results below).",
        ]
        if older
        else []
    )
    return "\n".join([*head, *rows, *tail])


def rewrite(readme: Path = README) -> str:
    """The table put between the markers of ``readme``; returns it."""
    text = readme.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    made = table(lines(), not_run_here())
    readme.write_text(text[:start] + "\n" + made + "\n" + text[end:])
    return made


if __name__ == "__main__":
    print(rewrite())
    sys.exit(0)
