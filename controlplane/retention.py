"""Retention: what grows without bound is archived (the row kept, its heavy payload cleared) or
pruned (the row deleted) once older than its setting, by the daily ``governance.retention`` task
and ``manage.py apply_retention``.

Each app declares the policy of the table it owns; this module, at the top of the layers, runs
them in order and records the run (a RetentionRun row and its audit row). Decisions and their
records (review items and decisions, tool grants, escalations, approvals, jobs, KPI values, the
audit trail) have no policy: nothing here can reach them.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.utils import timezone

from agents.tools import TOOL_CALL_RETENTION
from gateway.forwarding import ARGUMENTS_RETENTION
from gateway.mcp_tasks import ARGUMENTS_RETENTION as TASK_ARGUMENTS_RETENTION
from governance.contracts.services import OUTPUT_RETENTION
from governance.kernel import retention
from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Forbidden
from governance.kernel.models import RetentionRun
from governance.kernel.periodic import Failures
from governance.kernel.principals import Principal
from governance.kernel.services import record
from governance.kernel.taskruns import TASK_RUN_RETENTION
from sessions.scheduler import MESSAGE_RETENTION

PERMISSION = "governance.add_retentionrun"

# (setting, policy), in the order they run: gateway calls before tool calls, which they name.
POLICIES: list[tuple[str, retention.Policy]] = [
    ("RETENTION_CONTRACT_OUTPUTS_DAYS", OUTPUT_RETENTION),
    ("RETENTION_TOOL_CALLS_DAYS", ARGUMENTS_RETENTION),
    ("RETENTION_TOOL_CALLS_DAYS", TASK_ARGUMENTS_RETENTION),
    ("RETENTION_TOOL_CALLS_DAYS", TOOL_CALL_RETENTION),
    ("RETENTION_SESSION_MESSAGES_DAYS", MESSAGE_RETENTION),
    ("RETENTION_TASK_RUNS_DAYS", TASK_RUN_RETENTION),
]


@dataclass(frozen=True)
class Step:
    name: str
    table: str
    action: str
    setting: str
    days: int
    cutoff: datetime | None  # None: kept forever (days = 0)
    rows: int
    seconds: float


@dataclass
class Report:
    dry_run: bool
    started_at: datetime
    steps: list[Step] = field(default_factory=list)
    run_id: int | None = None  # the RetentionRun row; None for a dry run
    failures: Failures = field(default_factory=lambda: Failures("retention"))  # policies that failed

    @property
    def rows(self) -> int:
        return sum(step.rows for step in self.steps)

    def as_dict(self) -> dict:
        """JSON-safe, for the RetentionRun row and the task's result."""
        return {
            "dry_run": self.dry_run,
            "run_id": self.run_id,
            "rows": self.rows,
            "steps": [{**asdict(step), "cutoff": step.cutoff and step.cutoff.isoformat()} for step in self.steps],
            **self.failures.as_dict(),
        }

    def lines(self) -> list[str]:
        """One line per step, as the command prints them."""
        verb = {retention.ARCHIVE: "archived", retention.PRUNE: "pruned"}
        lines = []
        for step in self.steps:
            if step.cutoff is None:
                lines.append(f"{step.name}: kept forever ({step.setting}=0)")
                continue
            done = f"would be {verb[step.action]}" if self.dry_run else verb[step.action]
            lines.append(
                f"{step.name} ({step.table}): {step.rows} {done}, older than {step.cutoff:%Y-%m-%d %H:%M} "
                f"({step.setting}={step.days}) in {step.seconds:.2f} s"
            )
        lines.extend(f"{failed['item']}: failed ({failed['error']})" for failed in self.failures.items)
        return lines


def _days(setting: str) -> int:
    days = getattr(settings, setting)
    if days < 0:
        raise ImproperlyConfigured(f"{setting} must be 0 (keep forever) or a number of days, not {days}")
    return days


def run_retention(*, actor: Principal, dry_run: bool = False, batch_size: int | None = None) -> Report:
    """Apply every policy (or, with ``dry_run``, count what each would touch and write nothing).

    Each policy works in batches of ``batch_size`` rows (RETENTION_BATCH_SIZE), one short
    transaction each, so the run never holds long locks on a live table; two runs at once share
    the rows. The run is recorded once it is over, with what each step did. A policy that fails
    is reported (``errors`` in the result, a line of the command) and the next ones still run."""
    if actor.is_agent or (actor.is_operator and not actor.has_perm(PERMISSION)):
        raise Forbidden(f"Retention needs an operator with the {PERMISSION} permission.")
    batch_size = batch_size or settings.RETENTION_BATCH_SIZE
    every_days = {setting: _days(setting) for setting, _ in POLICIES}  # a bad setting stops the run before it starts
    report = Report(dry_run=dry_run, started_at=timezone.now())
    for setting, policy in POLICIES:
        with report.failures.guard(policy.name):
            days = every_days[setting]
            table = policy.candidates(report.started_at).model._meta.db_table
            clock = time.monotonic()
            cutoff = report.started_at - timedelta(days=days) if days else None
            if cutoff is None:
                rows = 0
            elif dry_run:
                rows = retention.count(policy, cutoff)
            else:
                rows = retention.apply(policy, cutoff, batch_size=batch_size)
            step = Step(policy.name, table, policy.action, setting, days, cutoff, rows, time.monotonic() - clock)
            report.steps.append(step)
    if not dry_run:
        with transaction.atomic(durable=True):
            run = RetentionRun.objects.create(
                started_at=report.started_at,
                finished_at=timezone.now(),
                actor=actor.label,
                rows=report.rows,
                steps=report.as_dict()["steps"],
            )
            report.run_id = run.pk
            record(actor=actor, action=AuditAction.RETENTION_APPLIED, target=run, rows=report.rows)
    return report
