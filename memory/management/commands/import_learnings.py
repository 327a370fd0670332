"""Import the seed's learnings files: `manage.py import_learnings learnings.jsonl
[--archive learnings-archive.jsonl] [--injections learnings-injections.jsonl]`."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError, CommandParser

from governance.kernel.principals import SYSTEM
from governance.kernel.progress import ProgressCommand
from memory.transfer import ImportReport, import_files


class Command(ProgressCommand):
    prefix = "[import]"
    help = (
        "Import learnings (then the archive, then injections) from the seed's JSONL files. Importing the same "
        "files again adds nothing; invalid lines are rejected on stderr and the valid ones go on."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("learnings", type=Path, help="learnings.jsonl")
        parser.add_argument("--archive", type=Path, help="learnings-archive.jsonl (rows become scope archived)")
        parser.add_argument("--injections", type=Path, help="learnings-injections.jsonl (missing: empty corpus)")

    def handle(self, *args: object, learnings: Path, archive: Path | None, injections: Path | None, **options: object):
        try:
            reports = import_files(
                learnings,
                archive=archive,
                injections=injections,
                actor=SYSTEM,
                progress=self.progress_callback(),
                warn=self.warn,
            )
        except FileNotFoundError as exc:
            raise CommandError(str(exc)) from exc
        finally:
            self.end_progress()
        for report in reports:
            self.stdout.write(self._summary(report))

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
