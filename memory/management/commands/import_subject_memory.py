"""`manage.py import_subject_memory DIR --subject KEY`: a subject's seed-002 JSON files."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from governance.kernel.exceptions import InvalidInput
from governance.kernel.principals import SYSTEM
from memory.subjects import services as subjects
from memory.subjects.documents import DOCUMENTS


class Command(BaseCommand):
    help = (
        "Import conversations.json, facts.json, embeddings.json, personality.json and emotion_history.json "
        "(those present) from DIR into a subject. Each file replaces what the subject had of it; an invalid "
        "file imports nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("directory", type=Path)
        parser.add_argument("--subject", required=True, help="the subject's key (created if new)")

    def handle(self, *args: object, directory: Path, subject: str, **options: object) -> None:
        documents = {}
        for name in DOCUMENTS:
            path = directory / f"{name}.json"
            if path.exists():
                try:
                    documents[name] = json.loads(path.read_text(encoding="utf-8"))
                except ValueError as exc:
                    raise CommandError(f"{path}: not JSON: {exc}") from exc
        if not documents:
            raise CommandError(f"no seed-002 document in {directory} (expected {', '.join(DOCUMENTS)}.json)")
        try:
            counts = subjects.import_documents(subject, documents, actor=SYSTEM)
        except InvalidInput as exc:
            raise CommandError(exc.summary()) from exc
        for name, count in counts.items():
            self.stdout.write(f"[subjects] {subject}: {name}: {count} row(s)")
