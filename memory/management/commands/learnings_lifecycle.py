"""The learnings lifecycle (the seed's learnings-lifecycle.py)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandParser

from memory import lifecycle


class Command(BaseCommand):
    help = "Migrate scopes, propose promotions (applied or sent to reviewers per LEARNINGS_PROMOTION_MODE), evict."

    def add_arguments(self, parser: CommandParser) -> None:
        steps = parser.add_mutually_exclusive_group(required=True)
        steps.add_argument("--migrate", action="store_true")
        steps.add_argument("--promote", action="store_true")
        steps.add_argument("--evict", action="store_true")
        parser.add_argument("--mode", choices=["review", "auto"], help="override LEARNINGS_PROMOTION_MODE")

    def handle(self, *args: object, migrate: bool, promote: bool, evict: bool, mode: str | None, **options: object):
        if migrate:
            report = lifecycle.migrate_scopes()
            self.stdout.write(f"[lifecycle] migrated: {report.migrated}")
        elif promote:
            report = lifecycle.propose_promotions(mode=mode)
            self.stdout.write(
                f"[lifecycle] proposed: {report.proposed}, applied: {report.applied}, refused: {report.refused}"
            )
        else:
            report = lifecycle.evict()
            self.stdout.write(f"[lifecycle] archived: {report.archived}")
