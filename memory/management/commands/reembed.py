"""Give every row of one kind a vector of one model: `manage.py reembed --kind learning --model all-MiniLM-L6-v2`."""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory import indexing
from memory.embeddings import EmbeddingError, get_backend


class Command(BaseCommand):
    help = (
        "Embed every row of --kind that has no vector of --model (a model change, or a long outage), in batches, "
        "with progress. Each batch is committed: run it again after a stop and it goes on where it was."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--kind", required=True, choices=sorted(indexing.MODELS))
        parser.add_argument("--model", required=True, help="the model of the configured embedding backend")
        parser.add_argument("--batch-size", type=int, default=indexing.BATCH_SIZE, help="rows per batch")

    def handle(self, *args: object, kind: str, model: str, batch_size: int, **options: object) -> None:
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1")
        try:
            backend = get_backend(model=model)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        if backend.model != model:
            raise CommandError(f"the configured embedding backend serves {backend.model}, not {model}")
        started = time.monotonic()

        def progress(done: int, total: int) -> None:
            rate = done / max(time.monotonic() - started, 1e-9)
            self.stdout.write(f"[reembed] {kind} {done}/{total} rows, {rate:.1f} rows/s")

        try:
            done = indexing.reembed(kind, backend=backend, batch_size=batch_size, progress=progress)
        except EmbeddingError as exc:
            raise CommandError(f"embedding failed, run again to go on: {exc}") from exc
        seconds = time.monotonic() - started
        self.stdout.write(f"[reembed] {kind} with {model}: {done} row(s) embedded in {seconds:.1f} s")
