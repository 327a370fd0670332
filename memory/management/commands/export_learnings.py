"""Write the learnings back in the seed's JSONL files: `manage.py export_learnings --out DIR`."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.transfer import ARCHIVE_FILE, INJECTIONS_FILE, LEARNINGS_FILE, export_learnings


class Command(BaseCommand):
    help = (
        f"Write {LEARNINGS_FILE} (live learnings), {ARCHIVE_FILE} and {INJECTIONS_FILE} under DIR, from one "
        "consistent snapshot; each file is replaced atomically."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--out", type=Path, required=True, help="directory (created if missing)")

    def handle(self, *args: object, out: Path, **options: object) -> None:
        try:
            report = export_learnings(out)
        except OSError as exc:
            raise CommandError(f"[export] {out}: {exc}") from exc
        self.stdout.write(
            f"[export] {report.directory}: {report.learnings} learning(s), {report.archived} archived, "
            f"{report.injections} injection(s)"
        )
