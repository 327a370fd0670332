"""Hold the product's line coverage to its floor after a whole `make test` run (var/coverage.json).

Every module of the product's packages reaches TARGET percent of its statements, except the ones
listed in tools/coverage-floor.txt, each with the percent it had when it was listed. The list only
shrinks: a listed module may not fall below its own figure, a module not listed may not fall below
TARGET, and one that reaches TARGET leaves the list (`--shrink`). A module loses its place on the
list by being covered, never by being added to it.

Timing-dependent paths (a retry, a lost race) make a run cover a few lines more or less than the
last, so a module may miss its figure by SLACK_LINES statements' worth before it counts as fallen.

    python tools/coverage_floor.py               # the check (make test, after a whole run)
    python tools/coverage_floor.py --shrink      # drop covered modules, raise the others' figures
    python tools/coverage_floor.py --regenerate  # write today's list (after changing TARGET)
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "var" / "coverage.json"
FLOOR = ROOT / "tools" / "coverage-floor.txt"
TARGET = 80.0
SLACK_LINES = 3


def measured() -> dict[str, tuple[float, int]]:
    """Each module's (percent covered, statements) from coverage's JSON report."""
    if not REPORT.exists():
        sys.exit(f"{REPORT.relative_to(ROOT)} is missing: run the whole suite with coverage first (make test)")
    files = json.loads(REPORT.read_text(encoding="utf-8"))["files"]
    return {
        path: (summary["percent_covered"], summary["num_statements"])
        for path, data in files.items()
        if (summary := data["summary"])["num_statements"]
    }


def read_floor() -> dict[str, float]:
    floor = {}
    for line in FLOOR.read_text(encoding="utf-8").splitlines() if FLOOR.exists() else []:
        if line.strip() and not line.startswith("#"):
            percent, path = line.split(maxsplit=1)
            floor[path] = float(percent)
    return floor


def write_floor(floor: dict[str, float]) -> None:
    header = f"# Modules below {TARGET:.0f} % line coverage, with the percent each may not fall below.\n"
    FLOOR.write_text(header + "".join(f"{floor[path]:5.1f} {path}\n" for path in sorted(floor)), "utf-8")


def fallen(percent: float, statements: int, floor: float) -> bool:
    return percent < floor - 100.0 * SLACK_LINES / statements


def main(argv: list[str]) -> int:
    if not set(argv) <= {"--shrink", "--regenerate"}:
        sys.exit(__doc__)
    found = measured()
    floor = read_floor()
    below = {path: math.floor(percent * 10) / 10 for path, (percent, _) in found.items() if percent < TARGET}
    if "--regenerate" in argv:
        write_floor(below)
        print(f"{FLOOR.name}: {len(below)} modules below {TARGET:.0f} % ({len(floor)} before)")
        return 0
    covered = sorted(path for path in floor if path not in below)
    if "--shrink" in argv:
        shrunk = {path: max(floor[path], below[path]) for path in floor if path in below}
        write_floor(shrunk)
        print(f"{FLOOR.name}: {len(shrunk)} modules ({len(floor) - len(shrunk)} covered and dropped)")
        floor = shrunk
    elif covered:
        print(f"coverage: {len(covered)} listed module(s) now reach {TARGET:.0f} %; shrink the list:")
        print("    python tools/coverage_floor.py --shrink")
    failures = [
        f"{path}: {percent:.1f} % of {statements} statements, below {floor.get(path, TARGET):.1f} %"
        + ("" if path in floor else " (not listed: new modules reach the target)")
        for path, (percent, statements) in sorted(found.items())
        if fallen(percent, statements, floor.get(path, TARGET))
    ]
    total = sum(p * n for p, n in found.values()) / max(1, sum(n for _, n in found.values()))
    print(f"coverage: {total:.1f} % of {sum(n for _, n in found.values())} statements; {len(floor)} modules listed")
    for failure in failures:
        print(f"fallen: {failure}")
    if failures:
        print(f"coverage: {len(failures)} module(s) fell below their floor: test them (the list only shrinks)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
