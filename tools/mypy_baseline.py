"""Run mypy; fail only on errors that are not in the committed baseline (tools/mypy-baseline.txt).

An error is keyed by file, error code and message, without its line number, so the baseline survives
unrelated edits; a key that occurs several times is counted. The baseline only shrinks:

    python tools/mypy_baseline.py               # the check (make lint, CI, pre-commit)
    python tools/mypy_baseline.py --shrink      # drop from the baseline what no longer occurs
    python tools/mypy_baseline.py --regenerate  # write today's errors (after a mypy or stubs upgrade)
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "tools" / "mypy-baseline.txt"
ERROR = re.compile(r"^(?P<path>[^:\s]+)(?::\d+){0,2}: error: (?P<message>.*?)(?:  \[(?P<code>[a-z-]+)\])?$")
ENTRY = re.compile(r"^\s*(?P<count>\d+) (?P<key>.+)$")
SUMMARY = re.compile(r"^Found (?P<count>\d+) errors? in ")
LINE_REFERENCE = re.compile(r"\bon line \d+")  # "already defined on line 12": also a line number


def key(path: str, code: str, message: str) -> str:
    return f"{path}: [{code}] {LINE_REFERENCE.sub('on line N', message)}"


def run_mypy() -> tuple[Counter[str], dict[str, list[str]]]:
    result = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, check=False)
    if result.returncode not in (0, 1):  # 2: a crash, a bad configuration, a syntax error
        sys.exit(f"mypy did not run to the end (exit {result.returncode}):\n{result.stdout}{result.stderr}")
    found: Counter[str] = Counter()
    lines: dict[str, list[str]] = {}
    for line in result.stdout.splitlines():
        if match := ERROR.match(line):
            entry = key(match["path"], match["code"] or "no-code", match["message"])
            found[entry] += 1
            lines.setdefault(entry, []).append(line)
        elif (summary := SUMMARY.match(line)) and int(summary["count"]) != found.total():
            sys.exit(f"mypy reported {summary['count']} errors, {found.total()} were understood:\n{result.stdout}")
    return found, lines


def read_baseline() -> Counter[str]:
    entries: Counter[str] = Counter()
    for line in BASELINE.read_text(encoding="utf-8").splitlines() if BASELINE.exists() else []:
        if match := ENTRY.match(line):
            entries[match["key"]] += int(match["count"])
    return entries


def write_baseline(entries: Counter[str]) -> None:
    BASELINE.write_text("".join(f"{count:4d} {entry}\n" for entry, count in sorted(entries.items())), "utf-8")


def main(argv: list[str]) -> int:
    if not set(argv) <= {"--shrink", "--regenerate"}:
        sys.exit(__doc__)
    found, lines = run_mypy()
    baseline = read_baseline()
    if "--regenerate" in argv:
        write_baseline(found)
        print(f"{BASELINE.name}: {found.total()} errors ({baseline.total()} before)")
        return 0
    gone = baseline - found
    if "--shrink" in argv:
        write_baseline(baseline - gone)
        print(f"{BASELINE.name}: {(baseline - gone).total()} errors ({gone.total()} dropped)")
    elif gone:
        print(f"mypy: {gone.total()} error(s) of the baseline no longer occur; shrink it:")
        print("    python tools/mypy_baseline.py --shrink")
    new = found - baseline
    for entry, count in sorted(new.items()):
        print(f"new ({count} more than the baseline's {baseline[entry]}): {entry}")
        print("\n".join(f"    {line}" for line in lines[entry]))
    if new:
        print(f"mypy: {new.total()} new error(s), not in tools/{BASELINE.name}: fix them (the baseline only shrinks)")
        return 1
    print(f"mypy: no new errors ({found.total()} known, in the baseline)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
