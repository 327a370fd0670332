"""`manage.py import_contracts [FILE.md]`: the LLM output contract catalog (seed 000's shape)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from governance.contracts import services as contracts
from governance.kernel.exceptions import InvalidInput
from governance.kernel.principals import SYSTEM


class Command(BaseCommand):
    help = (
        "Import a contract catalog written like seed 000 (## sections, ### `name` — `module`, field tables, "
        "notes). A contract whose content changed gets a new version; the same file again changes nothing. "
        "With --missing, only the contracts the catalog has no version of are added (what every start of "
        "`serve --role all` does with the shipped catalog)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path, nargs="?", default=contracts.CATALOG, help="default: shipped catalog")
        parser.add_argument(
            "--missing",
            action="store_true",
            help="add only the contracts the catalog lacks; leave the others (and operators' edits) as they are",
        )

    def handle(self, *args: object, file: Path, missing: bool, **options: object) -> None:
        try:
            text = file.read_text(encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"cannot read {file}: {exc}") from exc
        try:
            report = (contracts.add_missing if missing else contracts.import_catalog)(text, actor=SYSTEM)
        except InvalidInput as exc:
            raise CommandError(exc.summary()) from exc
        for status in ("created", "changed"):
            for name in getattr(report, status):
                self.stdout.write(f"[contracts] {status}: {name}")
        self.stdout.write(
            f"[contracts] {report.total} contract(s): {len(report.created)} created, "
            f"{len(report.changed)} new version(s), {len(report.unchanged)} unchanged"
        )
