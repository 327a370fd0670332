"""Import past gate results: `manage.py import_gate_results gate-results.jsonl`."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from governance.kernel.principals import SYSTEM
from memory.transfer import import_gate_results


class Command(BaseCommand):
    help = (
        'Import gate results, one JSON object a line: {"story": "PD-1", "gate": 8, "verdict": "GO", "at": '
        '"2026-03-01T10:00:00Z"}, at their own times. A file with a bad line is refused whole (each bad line '
        "reported with its number); lines already imported are skipped, so importing again adds nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path, help="gate results, JSONL")

    def handle(self, *args: object, file: Path, **options: object) -> None:
        try:
            report = import_gate_results(file, actor=SYSTEM, warn=self.stderr.write)
        except FileNotFoundError as exc:
            raise CommandError(str(exc)) from exc
        if report.rejected:
            raise CommandError(f"{len(report.rejected)} bad line(s) in {file.name}: nothing imported")
        self.stdout.write(
            f"[import] {file.name}: {report.lines} line(s), created {report.created}, "
            f"skipped {report.skipped} (already there) ({report.seconds:.2f} s)"
        )
