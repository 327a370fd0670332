"""Every requirement the code cites resolves in docs/requirements.md.

The code and the tests cite the seed documents by id (``TC-NOM-05``, ``INV-295-TR-10..13``,
``H-06``, ``Écart 9``, ``R1``, ``flow B2``), by test name (``test_tc_nom_11_...``), by document
(``seed 003``) and by section (``seed 004 section 2.3``, ``seed section 6``). Each must have an
entry in the index: a table row whose first cell names it in backticks (`TC-NOM-05`, `seed 003`,
`003 §6`). A new citation without an entry fails here, naming its file and line.

Pure file reading: no database.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INDEX = ROOT / "docs" / "requirements.md"
SCANNED = ("agents", "sessions", "memory", "governance", "tests", "bench")

# "seed section 6" without a number means the seed of the app it is written in.
DEFAULT_SEED = {"governance": "000", "agents": "001", "sessions": "003", "memory": "004"}

# Each pattern starts with a literal, so that re can skip ahead instead of trying every position;
# the checks on what precedes a match are lookbehinds placed after that literal.
_NN = r"\d{2}(?!\d)"
# TC-NOM-05, INV-295-TR-02/04/07/08/10..13, INV-plan-09, ERR-295-07, D-295-15/16, M-01, H-06; what
# precedes must not be a word character or a hyphen (PD-295 is not D-295), checked in _found.
_ID = re.compile(
    r"(?P<prefix>TC-(?:NOM|ERR|NEG|PLAN|NR)|INV-295-TR|INV-295|INV-plan|ERR-295|D-295|[MH])"
    rf"-(?P<first>{_NN})(?P<more>(?:(?:/|\.\.){_NN})*)"
)
_MORE = re.compile(r"(/|\.\.)(\d{2})")
_ECART = re.compile(r"Écart (\d+)\b")
_RULE = re.compile(r"R(?<![\w-]R)([1-9])(?![\w-])")  # seed 001's R1..R3
_FLOWS = re.compile(r"flows?(?<!\wflow)(?<!\wflows) (B\d(?:(?:,| and| or) B\d)*)\b")
_TEST_ID = re.compile(r"tc_(?<![A-Za-z0-9]tc_)(nom|err|neg|plan|nr)_(\d{2})(?!\d)")
_TEST_H = re.compile(r"test_h(?<!\wtest_h)(\d{2})_")
_SEED_WORD = r"eed(?<=[Ss]eed)(?<!\w[Ss]eed)"  # "seed" or "Seed", not inside a longer word
_SEED = re.compile(rf"{_SEED_WORD}[- ](\d{{3}})\b")
_NUMBER = r"\d+(?:\.\d+)?"
_SECTIONS = re.compile(
    rf"{_SEED_WORD}(?:[- ](?P<seed>\d{{3}}))?(?:'s)?,? (?:sections? |§ ?)"
    rf"(?P<list>{_NUMBER}(?:(?:, | and |-){_NUMBER})*)"
)
_ENTRY = re.compile(r"`([^`]+)`")


def _expand(prefix: str, first: str, more: str) -> list[str]:
    """``INV-295-TR`` ``10`` ``..13`` -> INV-295-TR-10 .. INV-295-TR-13; ``/`` lists, ``..`` ranges."""
    numbers = [int(first)]
    for separator, number in _MORE.findall(more):
        if separator == "..":
            numbers.extend(range(numbers[-1] + 1, int(number) + 1))
        else:
            numbers.append(int(number))
    return [f"{prefix}-{n:02d}" for n in numbers]


def _section_numbers(listed: str) -> list[str]:
    """``1, 3, 5-8, 12`` -> 1, 3, 5, 6, 7, 8, 12; ``2.1 and 2.2`` -> 2.1, 2.2."""
    numbers: list[str] = []
    for part in re.split(r", | and ", listed):
        low, _, high = part.partition("-")
        if high and low.isdigit() and high.isdigit():
            numbers.extend(str(n) for n in range(int(low), int(high) + 1))
        else:
            numbers.extend(p for p in (low, high) if p)
    return numbers


def _found(text: str, default_seed: str | None) -> Iterator[tuple[str, int]]:
    """(index entry needed, offset) for every citation in ``text``; no pattern spans two lines."""
    for match in _ID.finditer(text):
        start = match.start()
        if start and (text[start - 1].isalnum() or text[start - 1] in "_-"):
            continue
        for citation in _expand(match["prefix"], match["first"], match["more"]):
            yield citation, match.start()
    for match in _ECART.finditer(text):
        yield f"Écart {match[1]}", match.start()
    for match in _RULE.finditer(text):
        yield f"R{match[1]}", match.start()
    for match in _FLOWS.finditer(text):
        for flow in re.findall(r"B\d", match[1]):
            yield flow, match.start()
    for match in _TEST_ID.finditer(text):
        yield f"TC-{match[1].upper()}-{match[2]}", match.start()
    for match in _TEST_H.finditer(text):
        yield f"H-{match[1]}", match.start()
    for match in _SEED.finditer(text):
        yield f"seed {match[1]}", match.start()
    for match in _SECTIONS.finditer(text):
        seed = match["seed"] or default_seed or "*"
        for number in _section_numbers(match["list"]):
            yield f"{seed} §{number}", match.start()


def citations(line: str, default_seed: str | None = None) -> list[str]:
    """The index entries one line of code needs. A section of an unknown seed is ``* §6``."""
    return [citation for citation, _ in _found(line, default_seed)]


def _default_seed(path: Path) -> str | None:
    parts = path.relative_to(ROOT).parts
    app = parts[1] if parts[0] == "tests" and len(parts) > 2 else parts[0]
    return DEFAULT_SEED.get(app)


def references() -> Iterator[tuple[str, str]]:
    """(citation, "file:line") for every citation in the scanned Python files (but this one, whose
    examples are about the forms)."""
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            if path == Path(__file__).resolve():
                continue
            default = _default_seed(path)
            where = path.relative_to(ROOT).as_posix()
            text = path.read_text(encoding="utf-8")
            starts = [0, *(m.end() for m in re.finditer("\n", text))]
            for citation, offset in _found(text, default):
                yield citation, f"{where}:{bisect_right(starts, offset)}"


def index_entries() -> list[str]:
    """The backticked names in the first cell of every table row of the index, in order."""
    entries: list[str] = []
    for line in INDEX.read_text(encoding="utf-8").splitlines():
        if line.startswith("|") and not line.startswith("|-") and not line.startswith("| -"):
            first = line.split("|")[1]
            entries.extend(_ENTRY.findall(first))
    return entries


def _resolves(citation: str, entries: set[str]) -> bool:
    if citation.startswith("* §"):  # a section of whichever seed: some seed must have it
        return any(entry.endswith(citation[1:]) and entry[:3].isdigit() for entry in entries)
    return citation in entries


# --- The extraction itself -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "TC-NOM-16 (INV-295-TR-01/03/05/06/09)",
            ["TC-NOM-16", *(f"INV-295-TR-{n}" for n in ("01", "03", "05", "06", "09"))],
        ),
        ("(INV-295-TR-10..13)", ["INV-295-TR-10", "INV-295-TR-11", "INV-295-TR-12", "INV-295-TR-13"]),
        ("TC-NOM-12/13 and D-295-15/16", ["TC-NOM-12", "TC-NOM-13", "D-295-15", "D-295-16"]),
        ("(M-01, H-01; Écart 9) INV-plan-03 ERR-295-07", ["M-01", "H-01", "INV-plan-03", "ERR-295-07", "Écart 9"]),
        ("PD-295, all-MiniLM-L6-v2, YYYY-MM-DD-HHMMSS", []),
        ("(seed 001, R1 and R2)", ["R1", "R2", "seed 001"]),
        ("(seed 004, sections 2.1 and 2.2, flows B1 and B2)", ["B1", "B2", "seed 004", "004 §2.1", "004 §2.2"]),
        ("(seed 003, sections 1, 3, 5-8, 12)", ["seed 003", *(f"003 §{n}" for n in (1, 3, 5, 6, 7, 8, 12))]),
        ("def test_tc_nom_07_tc_plan_03_tc_plan_05_ordering", ["TC-NOM-07", "TC-PLAN-03", "TC-PLAN-05"]),
        ("def test_h06_a_second_call", ["H-06"]),
        ("Seed 004 TC-NEG-05, seed-002 texts", ["TC-NEG-05", "seed 004", "seed 002"]),
    ],
)
def test_citations_are_read_and_expanded(line: str, expected: list[str]) -> None:
    assert sorted(citations(line)) == sorted(expected)


def test_a_section_without_a_seed_number_is_the_apps_seed() -> None:
    assert citations("commit (seed section 6).", "003") == ["003 §6"]
    assert citations("(seed §2.3)") == ["* §2.3"]
    assert _resolves("* §2.3", {"004 §2.3"})
    assert not _resolves("* §2", {"004 §2.3"})


# --- The index --------------------------------------------------------------------------------------


def test_every_cited_requirement_has_an_index_entry() -> None:
    entries = set(index_entries())
    missing: dict[str, list[str]] = {}
    for citation, where in references():
        if not _resolves(citation, entries):
            missing.setdefault(citation, []).append(where)
    assert not missing, "cited but not in docs/requirements.md (add an entry, or fix the citation):\n" + "\n".join(
        f"  {citation}: {', '.join(places)}" for citation, places in sorted(missing.items())
    )


def test_index_entries_are_unique_and_described() -> None:
    entries = index_entries()
    duplicates = sorted({entry for entry in entries if entries.count(entry) > 1})
    assert not duplicates, f"listed twice in docs/requirements.md: {duplicates}"
    for line in INDEX.read_text(encoding="utf-8").splitlines():
        if line.startswith("|") and _ENTRY.search(line.split("|")[1]):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            assert len(cells) >= 2, f"an entry needs a statement: {line}"
            assert all(cells[:2]), f"an entry needs a statement: {line}"


_TOP = "|".join((*SCANNED, "docs", "templates", "static"))
_PLACE = re.compile(rf"(?P<path>(?:{_TOP})(?:/[\w.-]+)+/?)(?:: (?P<names>.+))?")


def test_the_places_the_index_names_exist() -> None:
    """Every `path` and `path: name, name` of the index is in the repository (relative, never
    outside it), so a moved module or a renamed test shows up here. A package (`memory/embeddings/:
    name`) has the name in one of its modules; ``Class.method`` has both; ``test_x_*`` and
    ``test_x_...`` name every test that starts with ``test_x_``."""
    stale: list[str] = []
    for token in _ENTRY.findall(INDEX.read_text(encoding="utf-8")):
        assert not token.startswith("/"), f"absolute path in the index: {token}"
        place = _PLACE.fullmatch(token)
        if place is None:
            continue
        path = ROOT / place["path"]
        if not path.exists():
            stale.append(token)
        elif place["names"]:
            files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
            source = "\n".join(file.read_text(encoding="utf-8") for file in files)
            for name in place["names"].split(", "):
                stem = name.rstrip("*").removesuffix("...")
                # ``Class.method`` (a queryset method): the class and the method are both there.
                if any(part not in source for part in stem.split(".")):
                    stale.append(f"{place['path']}: {name}")
    assert not stale, "docs/requirements.md names places that do not exist:\n  " + "\n  ".join(stale)
