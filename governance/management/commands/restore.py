"""`manage.py restore PATH [--database NAME] [--force]`: restore a dump made by `manage.py backup`."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from governance.kernel import backups


class Command(BaseCommand):
    help = (
        "Restore a dump with pg_restore into a new database on the same server (--database NAME, default "
        "<current>_restored_<time>). --force replaces the database in use instead: stop web, worker and beat "
        "first; the replaced database is kept as <current>_replaced_<time> until you drop it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, help="a dump written by manage.py backup")
        parser.add_argument("--database", default=None, help="the new database's name (must not exist)")
        parser.add_argument("--force", action="store_true", help="replace the database in use (product stopped)")

    def handle(self, *args: object, path: Path, database: str | None, force: bool, **options: object) -> None:
        try:
            restored = backups.restore(path, database=database, force=force)
        except backups.BackupError as exc:
            raise CommandError(str(exc)) from exc
        if restored.replaced is not None:
            self.stdout.write(
                f"[restore] {path} restored as {restored.database}; the previous database is kept as "
                f"{restored.replaced} (drop it once the product works on the restored one)"
            )
            return
        use = "DATABASE_URL with that name" if settings.DATABASE_URL else f"EMBEDDED_DB_NAME={restored.database}"
        self.stdout.write(f"[restore] {path} restored into the new database {restored.database}; to run on it: {use}")
