"""Print the step-0 injection block (the seed's gov-learnings-inject.py):
`manage.py inject --story PD-XXX --domain D --project P --query-text "..."`.

stdout is exactly the block's Markdown, because the caller pastes it into the step-0 prompt; a
failing source degrades its section (logged on stderr) and the exit code stays 0 (INV-295-15).
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

    def handle(self, *args: object, story: str, domain: str, project: str, query_text: str, **options: object):
        block = build_block(actor=SYSTEM, story=story, domain=domain, project=project, query_text=query_text)
        self.stdout.write(block["markdown"], ending="")
