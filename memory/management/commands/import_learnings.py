"""Import the seed's learnings files: `manage.py import_learnings learnings.jsonl
[--archive learnings-archive.jsonl] [--injections learnings-injections.jsonl]`."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from governance.principals import SYSTEM
from memory.transfer import ImportReport, import_files


class Command(BaseCommand):
    help = (
        "Import learnings (then the archive, then injections) from the seed's JSONL files. Importing the same "
        "files again adds nothing; invalid lines are rejected on stderr and the valid ones go on."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("learnings", type=Path, help="learnings.jsonl")
        parser.add_argument("--archive", type=Path, help="learnings-archive.jsonl (rows become scope archived)")
        parser.add_argument("--injections", type=Path, help="learnings-injections.jsonl (missing: empty corpus)")

    def handle(self, *args: object, learnings: Path, archive: Path | None, injections: Path | None, **options: object):
        self._counter_shown = False
        try:
            reports = import_files(
                learnings, archive=archive, injections=injections, actor=SYSTEM,
                progress=self._progress if self.stderr.isatty() else None, warn=self._warn,
            )  # fmt: skip
        except FileNotFoundError as exc:
            raise CommandError(str(exc)) from exc
        finally:
            self._end_counter()
        for report in reports:
            self.stdout.write(self._summary(report))

    def _progress(self, name: str, count: int) -> None:
        """A `\\r` counter on a terminal only (never in logs or pipes): large files show they move."""
        if count:
            self.stderr.write(f"\r[import] {Path(name).name}: {count} lines", style_func=str, ending="")
            self.stderr.flush()
            self._counter_shown = True

    def _end_counter(self) -> None:
        if self._counter_shown:
            self.stderr.write("")
            self._counter_shown = False

    def _warn(self, message: str) -> None:
        self._end_counter()  # a message must not be glued to the counter's line
        self.stderr.write(message)

    @staticmethod
    def _summary(report: ImportReport) -> str:
        name = Path(report.source).name
        if report.missing:
            return f"[import] {name}: not found, nothing imported"
        counts = (
            f"{report.lines} line(s), created {report.created}, skipped {report.skipped} (already there), "
            f"rejected {len(report.rejected)}, tags_hash corrected {report.corrected}"
        )
        if report.kind == "learnings":
            counts += f", scope migrated to story {report.migrated}"
        return f"[import] {name}: {counts} ({report.seconds:.2f} s)"
