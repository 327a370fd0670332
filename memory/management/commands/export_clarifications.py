"""Print a story's clarifications in the seed's Markdown format: `manage.py export_clarifications`."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from governance.kernel.exceptions import NotFound
from memory.clarifications import export_clarifications_markdown


class Command(BaseCommand):
    help = "Print one version (the newest by default) of a story's clarifications as Markdown."

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        """``--version`` selects a clarification version here (the brief's option), so it replaces
        Django's own ``--version`` (print Django's version) instead of clashing with it."""
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--story", required=True)
        parser.add_argument(
            "--version", dest="clarification_version", type=int, default=None, help="default: the newest"
        )

    def handle(self, *args: object, story: str, clarification_version: int | None, **options: object) -> None:
        try:
            text = export_clarifications_markdown(story, clarification_version)
        except NotFound as exc:
            raise CommandError(exc.detail) from exc
        self.stdout.write(text, ending="")
