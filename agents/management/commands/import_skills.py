"""`manage.py import_skills [FILE.yaml]`: skills into the registry, all or nothing."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents import skills
from governance.kernel.exceptions import Conflict, InvalidInput
from governance.kernel.principals import SYSTEM


class Command(BaseCommand):
    help = (
        "Import a YAML skill catalog (`skills: [{skill_id, version, description, tools}]`). A skill whose content "
        "changed needs a higher version; the same file again changes nothing; one refused skill imports none."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path, nargs="?", default=skills.CATALOG, help="default: shipped catalog")

    def handle(self, *args: object, file: Path, **options: object) -> None:
        try:
            text = file.read_text(encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"cannot read {file}: {exc}") from exc
        try:
            report = skills.import_skills(text, actor=SYSTEM)
        except InvalidInput as exc:
            raise CommandError(exc.summary()) from exc
        except Conflict as exc:
            raise CommandError(exc.detail) from exc
        for status in ("created", "updated"):
            for skill_id in getattr(report, status):
                self.stdout.write(f"[skills] {status}: {skill_id}")
        self.stdout.write(
            f"[skills] {len(report.created)} created, {len(report.updated)} updated, {len(report.unchanged)} unchanged"
        )
