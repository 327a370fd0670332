"""A tick starts a burst of sessions set-wise (issue 18.5): one statement per kind of work for a
batch of agents, the same sessions, messages and schedules as starting them one by one, the
per-agent path when the batch meets a refusal, and no double start under concurrent ticks."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest
from django.db import DatabaseError, connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agents.models import Agent
from governance.kernel import rows
from sessions import scheduler
from sessions.models import AISession, Automation
from tests.factories.agents import AgentFactory
from tests.factories.sessions import AISessionFactory
from tests.support.concurrency import at_once

INSTRUCTIONS: list[dict[str, Any]] = [
    {"text": "Audit yesterday's failed jobs."},
    {
        "segments": [
            {"type": "text", "text": "Start from"},
            {
                "type": "enrichment",
                "enrichmentType": "USE",
                "config": {"resource": "jobs", "filters": {"agent_id": "agent.test.any"}, "period": "-1_DAY"},
            },
        ]
    },
]


def queued(agent: Agent, now, minutes_ago: int = 5) -> AISession:
    return AISessionFactory.create(agent=agent, type="AUTOMATION", queued_at=now - timedelta(minutes=minutes_ago))


def due_automation(agent: Agent, now, messages: list[dict[str, Any]] | None = None) -> Automation:
    seed = scheduler.create_seed(
        agent, name="seed", messages=messages or INSTRUCTIONS, now=now, story="S-1", domain="seo"
    )
    return Automation.objects.create(
        agent=agent,
        name="Hourly audit",
        seed_session=seed,
        trigger=Automation.Trigger.SCHEDULED,
        interval_minutes=60,
        next_run_at=now - timedelta(minutes=1),
        created_by="test",
    )


def starts(count: int, now) -> list[Agent]:
    """``count`` agents with work: two in three have a queued run, the others a due automation
    (plain instructions: an enrichment's own data query is work per run, not the scheduler's)."""
    agents = AgentFactory.create_batch(count)
    for n, agent in enumerate(agents):
        if n % 3 == 2:
            due_automation(agent, now, messages=[{"text": "Audit yesterday's failed jobs."}])
        else:
            queued(agent, now)
    return agents


def picture(session: AISession) -> dict:
    """What an operator sees of a started session, with the agent's own names taken out."""
    return {
        "phase": session.phase,
        "active": session.is_active,
        "trigger": session.trigger,
        "story": (session.story, session.domain),
        "messages": [
            (m.seq, m.sender, m.system_type, (m.rich_content or {}).get("linearText"), m.timestamp)
            for m in session.messages.order_by("seq")
        ],
    }


@pytest.mark.django_db
def test_a_burst_costs_the_same_statements_whatever_its_size():
    now = timezone.now()
    small = starts(3, now)
    with CaptureQueriesContext(connection) as few:
        counts = scheduler.tick(now=now)
    assert counts["started"] == 3
    large = starts(12, now)
    with CaptureQueriesContext(connection) as many:
        counts = scheduler.tick(now=now)

    assert counts["started"] == 12
    assert len(many.captured_queries) == len(few.captured_queries)
    for agent in small + large:
        assert AISession.objects.filter(agent=agent, is_active=True).count() == 1


@pytest.mark.django_db
def test_a_batch_resumes_the_oldest_waiting_run_where_it_stopped():
    now = timezone.now()
    agent = AgentFactory()
    automation = due_automation(agent, now)
    newer = queued(agent, now, minutes_ago=1)
    suspended = queued(agent, now, minutes_ago=9)
    AISession.objects.filter(pk=suspended.pk).update(phase="CALLING_AI", end_reason="SUSPENDED", total_roundtrips=2)
    AgentFactory.create_batch(3)  # agents with nothing to do share the batch

    assert scheduler.tick(now=now)["started"] == 1

    resumed = AISession.objects.get(agent=agent, is_active=True)
    assert resumed.pk == suspended.pk  # the queue's oldest, before the newer run and the due automation
    assert (resumed.phase, resumed.end_reason, resumed.total_roundtrips) == ("CALLING_AI", None, 2)
    assert not AISession.objects.get(pk=newer.pk).is_active
    automation.refresh_from_db()
    assert automation.next_run_at < now  # still due: it waits for an empty queue
    assert not AISession.objects.filter(automation=automation).exists()


@pytest.mark.django_db
def test_a_scheduled_run_started_in_a_batch_equals_one_started_alone():
    now = timezone.now()
    alone, batched = AgentFactory(), AgentFactory()
    for agent in (alone, batched):
        due_automation(agent, now)

    scheduler.fill_slot(alone.pk, now=now)  # the per-agent path
    started_alone = AISession.objects.get(agent=alone, is_active=True)
    assert scheduler.tick(now=now)["started"] == 1  # the batch path, for the other agent
    started_batched = AISession.objects.get(agent=batched, is_active=True)

    assert picture(started_batched) == picture(started_alone)
    assert picture(started_batched)["phase"] == "CALLING_AI"  # the copied instructions' enrichments ran
    assert [m[2] for m in picture(started_batched)["messages"]] == ["", "", "DATA_ADDED"]
    next_runs = Automation.objects.filter(agent__in=[alone, batched]).values_list("next_run_at", flat=True)
    assert len(set(next_runs)) == 1
    assert next(iter(next_runs)) > now


@pytest.mark.django_db
def test_a_refused_activation_sends_its_batch_agent_by_agent(caplog):
    now = timezone.now()
    healthy, stuck = AgentFactory(), AgentFactory()
    good = queued(healthy, now)
    # Inactive, not COMPLETED, no end reason: the queue offers it, the machine refuses to run it.
    broken = queued(stuck, now)
    AISession.objects.filter(pk=broken.pk).update(phase="AWAITING_SESSION_CLOSURE")

    with caplog.at_level(logging.INFO, logger="sessions.scheduler"):
        counts = scheduler.tick(now=now)

    assert counts["started"] == 1
    assert AISession.objects.get(pk=good.pk).is_active
    assert not AISession.objects.get(pk=broken.pk).is_active
    assert "batch start refused (Conflict): agent by agent" in caplog.text


@pytest.mark.django_db(transaction=True)
def test_concurrent_ticks_start_each_agent_once():
    now = timezone.now()
    agents = starts(30, now)

    counts, errors = at_once(lambda: scheduler.tick(now=now), 4)

    assert errors == []
    # The ticks shared the work (SKIP LOCKED) and nobody started an agent twice.
    assert sum(count["started"] for count in counts) == 30
    for agent in agents:
        assert AISession.objects.filter(agent=agent, is_active=True).count() == 1
    assert AISession.objects.filter(trigger="SCHEDULED").count() == 10  # one run per due automation


@pytest.mark.django_db
def test_storing_many_rows_refuses_one_that_is_gone():
    agent = AgentFactory()
    kept, gone = AISessionFactory(agent=agent), AISessionFactory(agent=agent)
    AISession.objects.filter(pk=gone.pk).delete()
    kept.name = gone.name = "renamed"

    with pytest.raises(DatabaseError, match="affected 1 of 2 rows"):
        rows.update_many([kept, gone], ["name"])
