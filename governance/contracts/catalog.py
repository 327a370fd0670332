"""Reading contract catalogs written like seed 000: Markdown with `##` sections, one
`### \\`name\\` — \\`module\\`` heading per contract, a four-column table (field, expected type,
required, runtime effect) and bold notes (*Vigilance*, *Conseil*, *Remarque*, *Erreurs
courantes*) after it.

Pure: text in, dataclasses out. The rules each row turns into live in contract_rules.py; the
database writes in contracts.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_CONTRACT = re.compile(r"^###\s+`(?P<name>[^`]+)`\s+[\u2014\u2013-]+\s+`(?P<module>[^`]+)`\s*$")
_SECTION = re.compile(r"^##\s+(?P<title>.+?)\s*$")
_NOTE = re.compile(r"^\*\*(?P<label>[^*]+)\*\*\s*:?\s*(?P<text>.*)$")
# The seed's source references (【F:path†L1-L2】) point into a code base we do not have.
_REFERENCE = re.compile(r"【[^】]*】")
_HEADER_CELLS = ("champ", "field")
_PIPE = re.compile(r"(?<!\\)\|")


class CatalogError(ValueError):
    """The document is not shaped like a contract catalog; the message says where."""


@dataclass(frozen=True)
class FieldRow:
    path: str  # as written in the table, e.g. "`rankings[*].adjusted_score` ou `score`"
    type: str
    required: str
    effect: str
    position: int


@dataclass
class ContractDoc:
    name: str
    module: str
    section: str
    rows: list[FieldRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _cells(line: str) -> list[str]:
    """Split a table row on unescaped pipes; an escaped one (\\|) stays in its cell as a pipe."""
    body = line.strip().removeprefix("|")
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return [cell.strip().replace("\\|", "|") for cell in _PIPE.split(body)]


def parse(text: str) -> list[ContractDoc]:
    """Every contract of the document, in order. Notes and review tips that follow a contract's
    table belong to that contract until the next heading."""
    contracts: list[ContractDoc] = []
    section = ""
    current: ContractDoc | None = None
    note: list[str] | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _REFERENCE.sub("", raw).rstrip()
        if match := _CONTRACT.match(line):
            current = ContractDoc(name=match["name"].strip(), module=match["module"].strip(), section=section)
            contracts.append(current)
            note = None
            continue
        if line.startswith("## ") and (match := _SECTION.match(line)):
            section, current, note = match["title"], None, None
            continue
        if current is None:
            continue
        if line.startswith("|"):
            note = None
            cells = _cells(line)
            if cells[0].lower() in _HEADER_CELLS or set(cells[0]) <= {"-", " ", ":"}:
                continue
            if len(cells) != 4:
                raise CatalogError(f"line {number}: a field row has 4 cells, this one has {len(cells)}")
            path, type_, required, effect = cells
            current.rows.append(FieldRow(path, type_, required, effect.strip(), position=len(current.rows)))
        elif match := _NOTE.match(line):
            label, body = match["label"].strip().rstrip(":").rstrip(), match["text"].strip()
            current.notes.append(f"{label}: {body}" if body else label)
            note = current.notes
        elif line.strip() and note is not None:
            note[-1] = f"{note[-1]}\n{line.strip()}" if line.lstrip().startswith("-") else f"{note[-1]} {line.strip()}"
        elif not line.strip():
            note = None
    empty = [c.name for c in contracts if not c.rows]
    if empty:
        raise CatalogError(f"contracts without a field table: {', '.join(empty)}")
    return contracts
