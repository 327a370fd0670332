"""`manage.py audit_llm_log FILE.jsonl`: check every logged LLM output against its contract."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError, CommandParser

from governance.contracts import services as contracts
from governance.kernel.principals import SYSTEM
from governance.kernel.progress import ProgressCommand


class Command(ProgressCommand):
    help = (
        'Audit a JSONL log of LLM calls, one {"contract", "output", "agent"?, "ts"?} per line: every output is '
        "checked and stored as an audit record; bad lines are rejected on stderr and the others go on."
    )
    prefix = "[audit]"

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--top", type=int, default=10, help="violations listed in the summary (default 10)")

    def handle(self, *args: object, file: Path, top: int, **options: object) -> None:
        try:
            handle = file.open(encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"cannot read {file}: {exc}") from exc
        with handle:
            try:
                report = contracts.audit_log(
                    handle, source=str(file), principal=SYSTEM, progress=self.progress_callback(), warn=self.warn
                )
            finally:
                self.end_progress()
        rate = f"{report.compliant / report.checked:.1%}" if report.checked else "n/a"
        self.stdout.write(
            f"[audit] {file.name}: {report.lines} line(s), {report.checked} checked, {report.compliant} compliant "
            f"({rate}), {report.rejected} rejected"
        )
        for name, count in report.per_contract.most_common():
            self.stdout.write(f"[audit]   {name}: {count} checked")
        for (name, path, code), count in report.violations.most_common(top):
            self.stdout.write(f"[audit]   {count} x {code} at {name}:{path}")
