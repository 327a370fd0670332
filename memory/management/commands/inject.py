"""Print the step-0 injection block (the seed's gov-learnings-inject.py):
`manage.py inject --story PD-XXX --domain D --project P --query-text "..." [--dry-run]`.

stdout is exactly the block's Markdown, because the caller pastes it into the step-0 prompt; a
failing source degrades its section (logged on stderr) and the exit code stays 0 (INV-295-15).
``--dry-run`` previews the block without recording injections, so a migration or a test of the
block does not count as learnings reused.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandParser

from governance.kernel.principals import SYSTEM
from memory.injection import build_block


class Command(BaseCommand):
    help = "Print the three-section injection block (learnings, veille, clarifications) for a story."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--story", required=True, help="the story being started, e.g. PD-295")
        parser.add_argument("--domain", required=True)
        parser.add_argument("--project", required=True)
        parser.add_argument("--query-text", required=True, help="what the story is about; embedded for the KNN")
        parser.add_argument("--dry-run", action="store_true", help="preview: record no injection (reuse scores)")

    def handle(
        self, *args: object, story: str, domain: str, project: str, query_text: str, dry_run: bool, **options: object
    ):
        block = build_block(
            actor=SYSTEM, story=story, domain=domain, project=project, query_text=query_text, record=not dry_run
        )
        self.stdout.write(block["markdown"], ending="")
