"""The seed 000 contracts as the contract-rule tests use them: the catalog parsed once, validators
compiled from its rows or from one made-up row, and short readers of their reports, so each test
shows only the output it judges and the findings it expects."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from governance.contracts.catalog import ContractDoc, parse
from governance.contracts.codegen import compile_contract
from governance.contracts.rules import rule_from_row
from governance.contracts.validator import Report, Violation

SEED = Path(__file__).resolve().parents[3] / "governance" / "catalog" / "llm_output_contracts.md"  # seed 000
NNBSP = "\u202f"  # the narrow no-break space the seed writes in most bounds

CONTRACTS: list[ContractDoc] = parse(SEED.read_text(encoding="utf-8"))
BY_NAME = {c.name: c for c in CONTRACTS}


def validator(name: str) -> Callable[..., Report]:
    """The compiled validator of a seed contract: ``validate(output)`` or ``validate(output, known_ids)``."""
    doc = BY_NAME[name]
    return compile_contract([rule_from_row(r.path, r.type, r.required, r.effect) for r in doc.rows])


def one_field(type_words: str, required: str = "Oui", path: str = "`f`") -> Callable[..., Report]:
    """A contract of a single row, as the seed would write it."""
    return compile_contract([rule_from_row(path, type_words, required, "effect of f")])


def found(report: Report) -> list[tuple[str, str]]:
    """The violations as (path, code): what most assertions compare."""
    return [(v.path, str(v.code)) for v in report.violations]


def warned(report: Report) -> list[tuple[str, str]]:
    """The warnings as (path, code)."""
    return [(w.path, str(w.code)) for w in report.warnings]


def only(report: Report) -> Violation:
    """The one violation of the report; fails naming them all if there are more."""
    assert len(report.violations) == 1, found(report)
    return report.violations[0]
