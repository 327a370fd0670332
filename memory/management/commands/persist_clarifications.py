"""Store the PO's four answers of a story (seed 004 flow B2): `manage.py persist_clarifications`.

The answers come from four `--answer` options, or from a file in the seed's Markdown format
(`--file`, as written by `export_clarifications`), or as JSON `["...", "...", "...", "..."]`.
Either way they are stored byte for byte; a file is read as UTF-8 without newline translation.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from governance.kernel.exceptions import InvalidInput
from governance.kernel.principals import SYSTEM
from memory.clarifications import (
    ANSWERS,
    ClarificationWriteFailed,
    persist_clarifications,
    read_clarifications_markdown,
)


def read_answers(path: Path) -> list[str]:
    """The answers held in ``path``: a JSON list of strings, or a clarification Markdown file."""
    with path.open(encoding="utf-8", newline="") as handle:  # newline="": keep \r\n as written
        text = handle.read()
    if text.lstrip().startswith("["):
        answers = json.loads(text)
        if not isinstance(answers, list):
            raise ValueError("the JSON file must hold a list of strings")
        return answers
    return read_clarifications_markdown(text)["answers"]


class Command(BaseCommand):
    help = "Store the four PO answers of a story as its next clarifications version; prints version and name."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--story", required=True, help="e.g. PD-295")
        parser.add_argument("--domain", required=True)
        parser.add_argument("--project", required=True)
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--answer", action="append", dest="answers", help=f"one answer; give it {ANSWERS} times")
        source.add_argument("--file", type=Path, help="a JSON list of the answers, or a clarifications Markdown file")

    def handle(self, *args: object, **options: object) -> None:
        answers = options["answers"]
        if options["file"] is not None:
            try:
                answers = read_answers(options["file"])
            except (OSError, ValueError) as exc:
                raise CommandError(f"{options['file']}: {exc}") from exc
        try:
            version, name = persist_clarifications(
                story=options["story"],
                domain=options["domain"],
                project=options["project"],
                answers=answers,
                actor=SYSTEM,
            )
        except InvalidInput as exc:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in error['loc'][1:])}: {error['msg']}" for error in exc.errors
            )
            raise CommandError(f"{exc.detail} {problems}") from exc
        except ClarificationWriteFailed as exc:
            # ERR-295-09: step 0 goes on without the clarifications, so this is not a failing exit.
            self.stderr.write(f"[clarifications] write failed: {exc.detail}")
            return
        self.stdout.write(f"{options['story']} version {version}: {name}")
