"""Seed 003's EVENT trigger: an automation runs on the platform events job triggers fire on (a job
finishing, a learning promoted), in the event's own transaction."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone

from governance.kernel.models import AuditEvent
from sessions.models import AISession, Automation
from tests.support.jobs import finish_job, submit_job

GOOD = {
    "success": True,
    "data": {"scores": [{"url": "https://shop.test/a", "level": "V2"}], "recommendations": []},
    "confidence": 0.9,
}


def event_automation(api, event: str, event_filter: dict | None = None, **extra):
    body: dict[str, Any] = {
        "name": f"on {event}",
        "trigger": "EVENT",
        "event": event,
        "messages": [{"text": "Look at what changed."}],
    }
    if event_filter is not None:
        body["eventFilter"] = event_filter
    return api.post("/automations", {**body, **extra})


def runs(automation_id: int) -> list[AISession]:
    return list(AISession.objects.filter(automation_id=automation_id).order_by("created_at"))


@pytest.mark.django_db
def test_a_job_finishing_runs_the_event_automations_its_facts_match(vlevel, vlevel_api):
    response = event_automation(vlevel_api, "job.finished", {"agent": "agent.seo.vlevel", "status": ["succeeded"]})
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["trigger"], body["event"], body["eventFilter"]) == (
        "EVENT",
        "job.finished",
        {"agent": "agent.seo.vlevel", "status": ["succeeded"]},
    )
    other = event_automation(vlevel_api, "job.finished", {"intent": "rag_reindex"}).json()

    finish_job(submit_job(vlevel, {"urls": ["https://shop.test/a"]}), GOOD)

    (run,) = runs(body["id"])
    assert (run.trigger, run.type) == ("EVENT", "AUTOMATION")
    assert runs(other["id"]) == []


@pytest.mark.django_db
def test_a_promoted_learning_runs_the_learning_promoted_automations(vlevel, vlevel_api):
    from memory import lifecycle
    from memory.models import ReuseScore
    from tests.factories.memory import LearningFactory

    automation = event_automation(vlevel_api, "learning.promoted", {"domain": "seo"}).json()
    item = LearningFactory.create(scope="story", story="PD-9", domain="seo", tags=["#api"])
    ReuseScore.objects.create(
        story=item.story,
        gate=item.gate,
        tags_hash=item.tags_hash,
        nb_injections=1,
        nb_stories_gate8_go=0,
        nb_domains=1,
        reuse_score=Decimal("0.5"),
        computed_at=timezone.now(),
    )

    lifecycle.propose_promotions(mode="auto")

    assert [run.trigger for run in runs(automation["id"])] == ["EVENT"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"name": "x", "trigger": "EVENT", "messages": [{"text": "t"}]}, ["body", "event"]),
        (
            {"name": "x", "trigger": "MANUAL", "event": "job.finished", "messages": [{"text": "t"}]},
            ["body", "event"],
        ),
        (
            {
                "name": "x",
                "trigger": "EVENT",
                "event": "job.finished",
                "eventFilter": {"colour": "red"},
                "messages": [{"text": "t"}],
            },
            ["body", "eventFilter"],
        ),
        ({"name": "x", "trigger": "EVENT", "event": "session.started", "messages": [{"text": "t"}]}, ["body", "event"]),
    ],
)
def test_an_event_automation_is_checked_before_anything_is_written(vlevel, vlevel_api, body, loc):
    response = vlevel_api.post("/automations", body)

    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == loc
    assert not Automation.objects.exists()
    assert not AISession.objects.exists()


@pytest.mark.django_db
def test_a_run_the_quota_refuses_is_recorded_and_never_fails_the_event(vlevel, vlevel_api, settings):
    automation = event_automation(vlevel_api, "job.finished").json()
    settings.AGENT_MAX_QUEUED_SESSIONS = 0

    job = finish_job(submit_job(vlevel, {"urls": ["https://shop.test/a"]}), GOOD)

    assert job.status == "succeeded"
    assert runs(automation["id"]) == []
    assert AuditEvent.objects.filter(action="automation.event_refused").count() == 1
