"""A line counter for long-running management commands: `\\r`-rewritten on a terminal, absent in
logs and pipes, and never glued to a warning printed meanwhile."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand


class ProgressCommand(BaseCommand):
    prefix = "[progress]"

    def progress_callback(self):
        """What to hand a service as its ``progress``: the counter on a terminal only."""
        self._counter_shown = False
        return self._progress if self.stderr.isatty() else None

    def _progress(self, name: str, count: int) -> None:
        if count:
            self.stderr.write(f"\r{self.prefix} {Path(name).name}: {count} lines", style_func=str, ending="")
            self.stderr.flush()
            self._counter_shown = True

    def end_progress(self) -> None:
        if getattr(self, "_counter_shown", False):
            self.stderr.write("")
            self._counter_shown = False

    def warn(self, message: str) -> None:
        self.end_progress()  # a message must not be glued to the counter's line
        self.stderr.write(message)
