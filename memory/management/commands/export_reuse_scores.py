"""Export reuse scores as JSONL: `manage.py export_reuse_scores [--output FILE] [--story S] [--domain D]`."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandParser

from memory.transfer import export_reuse_scores, reuse_score_lines


class Command(BaseCommand):
    help = (
        "Write every reuse score (key, counts, score) as one JSON object a line, to stdout or to --output "
        "(written whole or not at all); --story and --domain keep some keys."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", type=Path, help="a file instead of stdout")
        parser.add_argument("--story", help="only the keys of this story")
        parser.add_argument("--domain", help="only keys with a learning of this domain")

    def handle(self, *args: object, output: Path | None, story: str | None, domain: str | None, **options: object):
        if output is None:
            for line in reuse_score_lines(story=story, domain=domain):
                self.stdout.write(json.dumps(line, ensure_ascii=False))
            return
        count = export_reuse_scores(output, story=story, domain=domain)
        self.stderr.write(f"[export] {output}: {count} score(s)")
