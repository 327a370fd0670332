"""Index a directory of watch notes (seed 004 flow B1): `manage.py index_veille DIR`."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from governance.kernel.principals import SYSTEM
from memory.watch_notes import index_veille


class Command(BaseCommand):
    help = (
        "Index every **/*.md watch note under DIR in one transaction. Invalid notes are skipped with a "
        "warning on stderr and the run goes on; notes whose file is gone are removed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("directory", type=Path)

    def handle(self, *args: object, directory: Path, **options: object) -> None:
        try:
            report = index_veille(directory, actor=SYSTEM, warn=self.stderr.write)
        except NotADirectoryError as exc:
            raise CommandError(str(exc)) from exc
        counts = report.as_dict()
        self.stdout.write(
            f"[veille] {counts['directory']}: indexed {counts['indexed']}, updated {counts['updated']}, "
            f"unchanged {counts['unchanged']}, skipped {counts['skipped']}, removed {counts['removed']}"
        )
