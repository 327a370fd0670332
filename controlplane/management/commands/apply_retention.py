"""`manage.py apply_retention [--dry-run]`: archive or prune what grows without bound, now."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser

from controlplane.retention import run_retention
from governance.kernel.principals import SYSTEM


class Command(BaseCommand):
    help = (
        "Apply the RETENTION_* settings at once, as the daily retention task does: archive contract check "
        "outputs, gateway call arguments and messages of finished sessions, prune tool calls and task runs "
        "past their days. --dry-run counts what would be done and writes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="count what would be done, write nothing")
        parser.add_argument("--batch-size", type=int, default=None, help="rows per transaction (RETENTION_BATCH_SIZE)")

    def handle(self, *args: object, dry_run: bool, batch_size: int | None, **options: object) -> None:
        if batch_size is not None and batch_size < 1:
            raise CommandError("--batch-size must be at least 1")
        try:
            report = run_retention(actor=SYSTEM, dry_run=dry_run, batch_size=batch_size)
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from exc
        for line in report.lines():
            self.stdout.write(f"[retention] {line}")
        total = f"{report.rows} row(s) would be archived or pruned" if dry_run else f"{report.rows} row(s) done"
        recorded = "" if report.run_id is None else f", recorded as retention run {report.run_id}"
        self.stdout.write(f"[retention] {'dry run: ' if dry_run else ''}{total}{recorded}")
