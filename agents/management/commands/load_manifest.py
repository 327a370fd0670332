"""Load agent manifests (YAML or JSON files) into the registry."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents import registry
from governance.kernel.exceptions import Conflict, InvalidInput
from governance.kernel.principals import SYSTEM


class Command(BaseCommand):
    help = "Validate, version and activate agent manifests from files. Each file is its own transaction."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", type=Path)

    def handle(self, *args: object, files: list[Path], **options: object) -> None:
        failures = 0
        for path in files:
            try:
                manifest, created = registry.load_manifest(path.read_text(encoding="utf-8"), actor=SYSTEM)
            except OSError as exc:
                failures += 1
                self.stderr.write(f"{path}: cannot read: {exc.strerror}")
            except InvalidInput as exc:
                failures += 1
                self.stderr.write(f"{path}: {exc.detail}")
                for error in exc.errors:
                    where = ".".join(str(part) for part in error["loc"][1:]) or "(document)"
                    self.stderr.write(f"  {where}: {error['msg']}")
            except Conflict as exc:
                failures += 1
                self.stderr.write(f"{path}: {exc.detail}")
            else:
                outcome = "activated" if created else "unchanged (already active)"
                self.stdout.write(f"{manifest.agent.agent_id} {manifest.version}: {outcome}")
        if failures:
            raise CommandError(f"{failures} of {len(files)} manifest(s) were not loaded.")
