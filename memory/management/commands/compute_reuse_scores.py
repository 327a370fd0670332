"""Compute reuse scores (the seed's compute-reuse-scores.py)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandParser

from memory.scoring import compute_reuse_scores


class Command(BaseCommand):
    help = "Recompute reuse scores: incrementally from the last run, or every key with --full."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--full", action="store_true", help="recompute every key, not only what changed")

    def handle(self, *args: object, full: bool, **options: object) -> None:
        outcome = compute_reuse_scores(full=full)
        self.stdout.write(f"[scoring] {outcome.mode}: {outcome.keys_updated} key(s) updated in {outcome.seconds:.3f} s")
        if outcome.corrections is not None:
            self.stdout.write(f"[scoring] corrections: {outcome.corrections}")
