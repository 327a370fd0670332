"""`manage.py tune_search`: measure the search's recall and set each (kind, model)'s ef_search (weekly in beat)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from governance.kernel.principals import SYSTEM
from memory import calibration


class Command(BaseCommand):
    help = (
        "Measure recall@5 of the vector search against an exact scan on a sample of stored vectors, and set "
        "the lowest ef_search that reaches MEMORY_SEARCH_RECALL_TARGET for each kind and model."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--kind", choices=calibration.KINDS, action="append", help="only these kinds")
        parser.add_argument("--sample", type=int, default=calibration.SAMPLE, help="stored vectors used as queries")
        parser.add_argument("--target", type=float, help="recall to reach (default MEMORY_SEARCH_RECALL_TARGET)")

    def handle(
        self, *args: object, kind: list[str] | None, sample: int, target: float | None, **options: object
    ) -> None:
        if sample < 1:
            raise CommandError("--sample must be at least 1")
        try:
            results = calibration.tune(actor=SYSTEM, kinds=kind or calibration.KINDS, sample=sample, target=target)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        if not results:
            self.stdout.write("[tune_search] no vectors to measure")
        for row in results:
            verdict = "reached" if row.reached else "NOT reached: searches use the best one tried"
            self.stdout.write(
                f"[tune_search] {row.kind}/{row.model}: ef_search {row.ef_search}, recall@{row.k} {row.recall:.3f} "
                f"(95% lower bound {row.recall_low:.3f}) over {row.sample_size} of {row.vectors} vectors "
                f"(target {row.target:g} {verdict})"
            )
