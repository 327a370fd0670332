"""A hostile agent listening to another agent's work: an EVENT automation (or an event job trigger)
fires on platform events, and a ``job.finished`` event names another agent's job, its intent and
its outcome. Events from other agents reach an agent only where its own manifest says so
(``events.subscribe``), when the subscription is made and again whenever an event fires, whoever
made the subscription and whenever."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from agents import triggers
from agents.manifest import read_text
from agents.models import Agent, Job, JobTrigger
from agents.registry import load_manifest
from governance.kernel.principals import SYSTEM
from sessions.models import AISession, Automation
from tests.support.jobs import finish_job, submit_job
from tests.support.manifests import manifest_text
from tests.support.refusals import last_audit_id, nothing_written, refusals_since

pytestmark = pytest.mark.django_db

URLS = {"urls": ["https://shop.test/a"]}
GOOD = {
    "success": True,
    "data": {"scores": [{"url": "https://shop.test/a", "level": "V2"}], "recommendations": []},
    "confidence": 0.9,
}


def on_finished_jobs(event_filter: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "watch",
        "trigger": "EVENT",
        "event": "job.finished",
        "messages": [{"text": "Look at what finished."}],
    }
    return body | ({"eventFilter": event_filter} if event_filter is not None else {})


def indexer_subscribes(version: str, *patterns: str) -> None:
    """A new version of the indexer's manifest, subscribing to ``patterns`` (none: to nobody)."""
    document = read_text(manifest_text("agent.rag.indexer"))
    document.update(version=version, events={"subscribe": list(patterns)})
    load_manifest(document, actor=SYSTEM)


def vlevel_finishes_a_job() -> Job:
    return finish_job(submit_job(Agent.objects.get(agent_id="agent.seo.vlevel"), URLS, key=str(uuid.uuid4())), GOOD)


def trigger_on_vlevels_jobs(agent: Agent, *, name: str) -> JobTrigger:
    """An event job trigger (not saved) for ``agent``, firing on agent.seo.vlevel's finished jobs."""
    return JobTrigger(
        name=name,
        agent=agent,
        kind="event",
        intent="rag_reindex",
        entity_type="page",
        payload={"documents": [{"id": 1}]},
        event="job.finished",
        event_filter={"agent": "agent.seo.vlevel"},
    )


def runs(automation_id: int) -> list[AISession]:
    return list(AISession.objects.filter(automation_id=automation_id))


def test_an_agent_cannot_subscribe_to_another_agents_finished_jobs(world):
    since = last_audit_id()

    with nothing_written():
        response = world.other.post("/automations", on_finished_jobs({"agent": "agent.seo.vlevel"}))

    assert response.status_code == 403
    assert response["Content-Type"] == "application/problem+json"
    assert "events.subscribe" in response.json()["detail"]
    (refusal,) = refusals_since(since)
    assert (refusal.actor, refusal.data["status"]) == ("agent:agent.rag.indexer", 403)


def test_an_agent_whose_manifest_subscribes_hears_the_other_agents_jobs(world):
    indexer_subscribes("2.1.0", "agent.seo.*")

    response = world.other.post("/automations", on_finished_jobs({"agent": "agent.seo.vlevel"}))
    assert response.status_code == 201, response.content
    vlevel_finishes_a_job()

    assert [run.trigger for run in runs(response.json()["id"])] == ["EVENT"]


def test_an_unfiltered_subscription_hears_only_what_the_manifest_lets_it(world):
    """No ``agent`` in the filter is every agent the listener may hear: its own jobs, and the
    other agents' only once its manifest names them."""
    automation = world.other.post("/automations", on_finished_jobs()).json()

    vlevel_finishes_a_job()
    assert runs(automation["id"]) == []

    indexer_subscribes("2.1.0", "agent.seo.vlevel")
    vlevel_finishes_a_job()
    assert len(runs(automation["id"])) == 1


def test_a_subscription_the_manifest_no_longer_allows_hears_nothing_more(world):
    indexer_subscribes("2.1.0", "agent.seo.vlevel")
    automation = world.other.post("/automations", on_finished_jobs({"agent": "agent.seo.vlevel"})).json()
    indexer_subscribes("2.2.0")  # the subscription is taken out of the manifest

    vlevel_finishes_a_job()

    assert runs(automation["id"]) == []


def test_subscriptions_made_before_the_rule_or_by_an_operator_deliver_nothing(world):
    """Rows written before the rule existed (or by an operator for the agent): the firing side
    checks the listener's manifest too, for automations and job triggers alike."""
    indexer = Agent.objects.get(agent_id="agent.rag.indexer")
    seed = AISession.objects.create(agent=indexer, name="seed", type="SEED")
    legacy = Automation.objects.create(
        agent=indexer,
        name="legacy",
        seed_session=seed,
        trigger="EVENT",
        event="job.finished",
        event_filter={"agent": "agent.seo.vlevel"},
        created_by="user:alice",
    )
    trigger_on_vlevels_jobs(indexer, name="legacy").save()

    vlevel_finishes_a_job()

    assert runs(legacy.pk) == []
    assert not Job.objects.filter(agent=indexer).exists()


def test_an_operator_cannot_save_a_job_trigger_the_listeners_manifest_does_not_allow(world):
    indexer = Agent.objects.get(agent_id="agent.rag.indexer")
    trigger = trigger_on_vlevels_jobs(indexer, name="follow-vlevel")

    with pytest.raises(ValidationError) as refused:
        triggers.save_trigger(trigger, actor=SYSTEM, changed=[])

    assert "events.subscribe" in " ".join(refused.value.message_dict["event_filter"])
    assert not JobTrigger.objects.filter(name="follow-vlevel").exists()


def test_a_subscription_names_agent_ids_or_star_patterns(admin_api, world):
    document = read_text(manifest_text("agent.rag.indexer"))
    document.update(version="2.1.0", events={"subscribe": ["agent.seo.[a-z]*"]})

    response = admin_api.put("/agents/agent.rag.indexer/manifest", document)

    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["body", "events", "subscribe", 0]
