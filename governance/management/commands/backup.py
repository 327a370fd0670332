"""`manage.py backup [--output PATH]`: dump the database with pg_dump (custom format)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from governance.kernel import backups


class Command(BaseCommand):
    help = (
        "Dump the product's database (the embedded server, or DATABASE_URL's) with pg_dump in custom format, "
        "to BACKUP_DIR/<database>-<time>.dump unless --output says where. Safe while the product runs: "
        "pg_dump reads one consistent snapshot."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", type=Path, default=None, help="the dump file to write (must not exist)")

    def handle(self, *args: object, output: Path | None, **options: object) -> None:
        try:
            path = backups.backup(output or backups.default_output())
        except backups.BackupError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"[backup] {path} ({path.stat().st_size / 1_048_576:.1f} MiB)")
