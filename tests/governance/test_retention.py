"""Retention: what grows without bound is archived or pruned once past its setting, in batches,
and recorded; decisions, the audit trail and jobs are never touched; a dry run writes nothing;
0 keeps forever; two runs at once share the rows."""

from __future__ import annotations

import io
from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from agents.models import Agent, Escalation, Job, KpiSample, ToolCall, ToolGrant
from controlplane.retention import run_retention
from controlplane.tasks import apply_retention
from gateway.models import GatewayCall, ToolTask
from governance.contracts.models import ContractCheck
from governance.kernel.exceptions import Forbidden
from governance.kernel.models import AuditEvent, RetentionRun, TaskRun
from governance.kernel.principals import SYSTEM, Principal
from governance.reviews import services as reviews
from governance.reviews.models import ReviewDecision, ReviewItem
from sessions.models import AISession, SessionMessage
from tests.factories.agents import KpiSampleFactory
from tests.factories.gateway import GatewayCallFactory
from tests.factories.governance import ContractCheckFactory, ContractFactory, ReviewItemFactory, TaskRunFactory
from tests.factories.sessions import AISessionFactory, AutomationFactory
from tests.support.concurrency import at_once
from tests.support.jobs import submit_job
from tests.support.manifests import load

DAYS = 30


@pytest.fixture(autouse=True)
def policy(settings):
    settings.RETENTION_CONTRACT_OUTPUTS_DAYS = DAYS
    settings.RETENTION_TOOL_CALLS_DAYS = DAYS
    settings.RETENTION_SESSION_MESSAGES_DAYS = DAYS
    settings.RETENTION_TASK_RUNS_DAYS = DAYS
    return settings


def ago(days: float) -> datetime:
    return timezone.now() - timedelta(days=days)


@dataclass
class World:
    """One old and one recent row of each kind, and the rows retention must leave whatever their age."""

    old_check: ContractCheck
    new_check: ContractCheck
    old_call: GatewayCall
    new_call: GatewayCall
    old_tool_call: ToolCall
    new_tool_call: ToolCall
    granted_tool_call: ToolCall
    logged_tool_call: ToolCall
    finished_old: AISession
    finished_recent: AISession
    resumable_old: AISession
    seed_old: AISession
    old_run: TaskRun
    new_run: TaskRun
    lone_old_run: TaskRun
    old_task: ToolTask
    new_task: ToolTask


def _task(agent: Agent, days: float) -> ToolTask:
    """An approval-gated call made as an MCP task, still working (never polled to its end)."""
    task = ToolTask.objects.create(agent=agent, tool_id="mcp__s__sql", arguments={"query": "select 1"}, ttl_ms=60_000)
    ToolTask.objects.filter(pk=task.pk).update(created_at=ago(days))
    return task


def _finished(session: AISession, days: float, phase: str = "COMPLETED") -> AISession:
    for seq, sender in enumerate(["USER", "AI", "SYSTEM"], start=1):
        SessionMessage.objects.create(
            session=session,
            seq=seq,
            timestamp=ago(days),
            sender=sender,
            text_content=f"{sender} said something",
            ai_message={"preText": "hello"} if sender == "AI" else None,
            system_message={"summary": "data"} if sender == "SYSTEM" else None,
        )
    AISession.objects.filter(pk=session.pk).update(phase=phase, last_activity=ago(days))
    return session


@pytest.fixture
def world(db) -> World:
    agent = load("agent.seo.vlevel")
    item = ReviewItemFactory.create(kind="tool_approval", agent=agent)
    granted = ToolCall.objects.create(agent=agent, tool_id="gsc.read", called_at=ago(90))
    ToolGrant.objects.create(
        agent=agent,
        tool_id="gsc.read",
        arguments_hash="h",
        review_item=item,
        status="used",
        tool_call=granted,
        used_at=ago(90),
    )
    logged = ToolCall.objects.create(agent=agent, tool_id="mcp__s__sql", called_at=ago(90))
    GatewayCallFactory.create(agent=agent, called_at=ago(90), tool_call=logged)
    automation = AutomationFactory.create(agent=agent)
    return World(
        old_check=ContractCheckFactory.create(agent=agent, output={"status": "ok"}, checked_at=ago(DAYS + 1)),
        new_check=ContractCheckFactory.create(agent=agent, output={"status": "ok"}, checked_at=ago(DAYS - 1)),
        old_call=GatewayCall.objects.filter(tool_call=logged).get(),
        new_call=GatewayCallFactory.create(agent=agent, called_at=ago(DAYS - 1)),
        old_tool_call=ToolCall.objects.create(agent=agent, tool_id="gsc.read", called_at=ago(DAYS + 1)),
        new_tool_call=ToolCall.objects.create(agent=agent, tool_id="gsc.read", called_at=ago(DAYS - 1)),
        granted_tool_call=granted,
        logged_tool_call=logged,
        finished_old=_finished(AISessionFactory.create(agent=agent), DAYS + 1),
        finished_recent=_finished(AISessionFactory.create(agent=agent), DAYS - 1),
        resumable_old=_finished(AISessionFactory.create(agent=agent, type="AUTOMATION"), DAYS + 1, phase="IDLE"),
        seed_old=_finished(automation.seed_session, DAYS + 1),
        old_run=TaskRunFactory.create(task_name="governance.heartbeat", started_at=ago(DAYS + 1)),
        new_run=TaskRunFactory.create(task_name="governance.heartbeat", started_at=ago(1)),
        lone_old_run=TaskRunFactory.create(task_name="memory.full_scoring", started_at=ago(DAYS + 5)),
        old_task=_task(agent, DAYS + 1),
        new_task=_task(agent, DAYS - 1),
    )


def _rows(report) -> dict[str, int]:
    return {step.name: step.rows for step in report.steps}


def _untouched() -> dict[str, int]:
    """Decisions, the audit trail (before this run's own row), jobs, KPI values."""
    return {
        "audit": AuditEvent.objects.exclude(action="retention.applied").count(),
        "review items": ReviewItem.objects.count(),
        "review decisions": ReviewDecision.objects.count(),
        "grants": ToolGrant.objects.count(),
        "escalations": Escalation.objects.count(),
        "jobs": Job.objects.count(),
        "kpi samples": KpiSample.objects.count(),
    }


def test_each_table_loses_only_what_is_past_its_days(world):
    report = run_retention(actor=SYSTEM)

    assert _rows(report) == {
        "contract check outputs": 1,
        "gateway call arguments": 1,
        "tool task arguments": 1,
        "tool calls": 2,
        "session messages": 3,
        "task runs": 1,
    }
    # Contract checks: the old one keeps its verdict and hash, loses its output; the new one is whole.
    world.old_check.refresh_from_db()
    assert (world.old_check.output, world.old_check.output_sha256, world.old_check.compliant) == (None, "0" * 64, True)
    assert ContractCheck.objects.get(pk=world.new_check.pk).output == {"status": "ok"}
    # Gateway calls: rows kept, the old one without its arguments.
    world.old_call.refresh_from_db()
    assert world.old_call.arguments is None
    assert world.old_call.arguments_hash
    assert GatewayCall.objects.get(pk=world.new_call.pk).arguments == {"query": "select 1"}
    # Tool tasks: the old one ends failed without its arguments (no poll can forward it now).
    world.old_task.refresh_from_db()
    assert (world.old_task.arguments, world.old_task.status) == (None, ToolTask.Status.FAILED)
    assert ToolTask.objects.get(pk=world.new_task.pk).arguments == {"query": "select 1"}
    # Tool calls: the old ones are gone, but for the one a reviewer's grant used; the gateway call
    # that named one keeps its own record of the call, without the link.
    assert set(ToolCall.objects.values_list("pk", flat=True)) == {world.new_tool_call.pk, world.granted_tool_call.pk}
    assert (world.old_call.tool_call_id, world.old_call.agent_id) == (None, world.logged_tool_call.agent_id)
    # Messages: only those of a session finished more than DAYS ago, and not a seed.
    archived = SessionMessage.objects.filter(archived_at__isnull=False)
    assert set(archived.values_list("session", flat=True)) == {world.finished_old.pk}
    assert list(archived.values_list("seq", "sender", "text_content", "ai_message", "system_message")) == [
        (1, "USER", None, None, None),
        (2, "AI", None, None, None),
        (3, "SYSTEM", None, None, None),
    ]
    for kept in (world.finished_recent, world.resumable_old, world.seed_old):
        assert not kept.messages.filter(text_content__isnull=True).exists()
    # Task runs: the old heartbeat is gone; the last run of a task stays whatever its age.
    assert set(TaskRun.objects.values_list("pk", flat=True)) == {world.new_run.pk, world.lone_old_run.pk}


def test_the_run_is_recorded_with_what_each_step_did(world):
    report = run_retention(actor=SYSTEM)

    run = RetentionRun.objects.get()
    assert report.run_id == run.pk
    assert run.rows == 9
    assert run.actor == "system"
    steps = {step["name"]: step for step in run.steps}
    assert steps["tool calls"]["table"] == "agents_toolcall"
    assert steps["tool calls"]["action"] == "prune"
    assert steps["session messages"]["action"] == "archive"
    assert steps["task runs"]["days"] == DAYS
    assert steps["task runs"]["cutoff"] is not None
    assert all(step["seconds"] >= 0 for step in run.steps)
    audit = AuditEvent.objects.get(action="retention.applied")
    assert (audit.target_id, audit.data) == (str(run.pk), {"rows": 9})


def test_decisions_the_audit_trail_jobs_and_kpis_are_never_touched(world):
    agent = world.old_check.agent
    job = submit_job(agent, {"urls": ["https://shop.test/a"]})
    Job.objects.filter(pk=job.pk).update(created_at=ago(400), finished_at=ago(400), status="done")
    Escalation.objects.create(job=job, triggers=["x"], reason="old", timeout_hours=1, deadline=ago(399))
    decided = ReviewItemFactory.create(kind="escalation", agent=agent)
    reviews.decide(decided.pk, actor=SYSTEM, decision="expire", notify=False)
    KpiSampleFactory.create(agent=agent, recorded_at=ago(400))
    AuditEvent.objects.update(at=ago(400))
    before = _untouched()

    run_retention(actor=SYSTEM)

    assert _untouched() == before
    assert all(before.values()), before


def test_a_dry_run_counts_what_a_run_does_and_writes_nothing(world):
    payloads = sorted(SessionMessage.objects.values_list("pk", "text_content"))
    before = (
        ContractCheck.objects.filter(output__isnull=True).count(),
        ToolCall.objects.count(),
        TaskRun.objects.count(),
    )

    dry = run_retention(actor=SYSTEM, dry_run=True)

    assert dry.run_id is None
    assert not RetentionRun.objects.exists()
    assert not AuditEvent.objects.filter(action="retention.applied").exists()
    assert sorted(SessionMessage.objects.values_list("pk", "text_content")) == payloads
    assert (
        ContractCheck.objects.filter(output__isnull=True).count(),
        ToolCall.objects.count(),
        TaskRun.objects.count(),
    ) == before
    assert _rows(dry) == _rows(run_retention(actor=SYSTEM))


def test_zero_days_keeps_forever(world, policy):
    policy.RETENTION_CONTRACT_OUTPUTS_DAYS = 0
    policy.RETENTION_TOOL_CALLS_DAYS = 0
    policy.RETENTION_SESSION_MESSAGES_DAYS = 0
    policy.RETENTION_TASK_RUNS_DAYS = 0

    report = run_retention(actor=SYSTEM)

    assert report.rows == 0
    assert all(step.cutoff is None for step in report.steps)
    assert ContractCheck.objects.filter(output__isnull=True).count() == 0
    assert ToolCall.objects.count() == 4
    assert TaskRun.objects.count() == 3
    assert not SessionMessage.objects.filter(archived_at__isnull=False).exists()


def test_one_table_kept_forever_while_others_are_pruned(world, policy):
    policy.RETENTION_TOOL_CALLS_DAYS = 0

    rows = _rows(run_retention(actor=SYSTEM))

    assert rows["tool calls"] == rows["gateway call arguments"] == 0
    assert rows["contract check outputs"] == 1
    assert rows["task runs"] == 1


def test_batches_smaller_than_the_rows_still_do_them_all(world):
    agent = world.old_check.agent
    ToolCall.objects.bulk_create(
        ToolCall(agent=agent, tool_id="gsc.read", called_at=ago(DAYS + 2 + n / 100)) for n in range(10)
    )
    for _ in range(6):
        ContractCheckFactory.create(agent=agent, output={"n": 1}, checked_at=ago(DAYS + 3))

    rows = _rows(run_retention(actor=SYSTEM, batch_size=3))

    assert rows["tool calls"] == 12
    assert rows["contract check outputs"] == 7
    assert not ToolCall.objects.filter(called_at__lt=ago(DAYS), grant__isnull=True).exists()
    assert not ContractCheck.objects.filter(checked_at__lt=ago(DAYS), output__isnull=False).exists()


def test_agents_and_operators_without_the_permission_are_refused(world, viewer, admin_operator):
    with pytest.raises(Forbidden):
        run_retention(actor=Principal(agent=world.old_check.agent))
    with pytest.raises(Forbidden):
        run_retention(actor=Principal(user=viewer))
    assert not RetentionRun.objects.exists()
    assert ToolCall.objects.count() == 4

    assert run_retention(actor=Principal(user=admin_operator)).rows == 9


def test_the_command_prints_what_it_would_do_then_does_it(world):
    dry = io.StringIO()
    call_command("apply_retention", "--dry-run", stdout=dry)
    assert "[retention] tool calls (agents_toolcall): 2 would be pruned" in dry.getvalue()
    assert "dry run: 9 row(s) would be archived or pruned" in dry.getvalue()
    assert ToolCall.objects.count() == 4

    done = io.StringIO()
    call_command("apply_retention", stdout=done)
    assert "[retention] session messages (ai_sessions_sessionmessage): 3 archived" in done.getvalue()
    assert f"9 row(s) done, recorded as retention run {RetentionRun.objects.get().pk}" in done.getvalue()


def test_a_negative_setting_is_refused_before_anything_is_done(world, policy):
    policy.RETENTION_TASK_RUNS_DAYS = -1
    with pytest.raises(CommandError, match="RETENTION_TASK_RUNS_DAYS must be 0"):
        call_command("apply_retention", stdout=io.StringIO())
    assert ToolCall.objects.count() == 4  # the steps before task runs did not run either
    assert not ContractCheck.objects.filter(output__isnull=True).exists()


def test_the_daily_task_is_scheduled_and_returns_its_report(world):
    schedule = PeriodicTask.objects.get(name="retention")
    assert (schedule.task, schedule.interval.every, schedule.enabled) == ("governance.retention", 86400, True)

    result = apply_retention()

    assert result["rows"] == 9
    assert result["run_id"] == RetentionRun.objects.get().pk


@pytest.mark.django_db(transaction=True)
def test_two_runs_at_once_share_the_rows_without_counting_one_twice(policy):
    agent = load("agent.seo.vlevel")
    ToolCall.objects.bulk_create(
        ToolCall(agent=agent, tool_id="gsc.read", called_at=ago(DAYS + 1 + n / 1000)) for n in range(600)
    )
    contract = ContractFactory.create()
    ContractCheck.objects.bulk_create(
        ContractCheckFactory.build(agent=agent, contract=contract, output={"n": n}, checked_at=ago(DAYS + 1))
        for n in range(400)
    )
    reports, errors = at_once(lambda: run_retention(actor=SYSTEM, batch_size=25), 2)

    assert not errors
    assert len(reports) == 2
    totals = {name: sum(_rows(report)[name] for report in reports) for name in _rows(reports[0])}
    assert totals["tool calls"] == 600
    assert totals["contract check outputs"] == 400
    assert ToolCall.objects.count() == 0
    assert not ContractCheck.objects.filter(output__isnull=False).exists()
    assert sorted(RetentionRun.objects.values_list("rows", flat=True)) == sorted(r.rows for r in reports)
