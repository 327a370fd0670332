"""Scripted automations: made by server-side code only, and the actions they "run" are reported as
simulated, so no reader of the session can take them for real outcomes."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.utils import timezone

from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM
from sessions import automations, demo, hosted, profiles, scheduler
from sessions.models import AISession, Automation, ProviderProfile
from tests.support.manifests import load_seed_manifests

pytestmark = pytest.mark.django_db

UPSERT = "mcp__vector__upsert"  # the indexer's tool that needs no approval


def scripted_run(agent, *, simulate: bool) -> AISession:
    script = [json.dumps({"preText": "Upserting.", "actionCommands": [{"type": UPSERT, "params": {"id": "doc-1"}}]})]
    profiles.create_profile(
        actor=SYSTEM, name="script", provider="scripted", options={"responses": script, "simulate_actions": simulate}
    )
    automation = automations.create_automation(
        agent, actor=SYSTEM, name="upsert", trigger="MANUAL", messages=[{"text": "go"}], profile_name="script"
    )
    _, session = scheduler.execute_automation(automation, actor=SYSTEM)
    assert hosted.call_provider(str(session.pk), actor=SYSTEM) == "answered"
    session.refresh_from_db()
    assert session.phase == "EXECUTING_ACTIONS"
    return session


def test_simulated_actions_say_so():
    indexer = load_seed_manifests()["agent.rag.indexer"]
    session = scripted_run(indexer, simulate=True)

    assert hosted.simulate_actions(str(session.pk), actor=SYSTEM) == "simulated"

    message = session.messages.filter(system_type="ACTIONS_EXECUTED").get()
    [result] = message.system_message["commandResults"]
    assert result["status"] == "SUCCESS"
    assert result["simulated"] is True
    assert result["summary"].startswith("SIMULATED")
    assert "nothing was run" in message.system_message["summary"]


def test_a_script_that_does_not_ask_for_simulation_leaves_actions_to_the_agent():
    indexer = load_seed_manifests()["agent.rag.indexer"]
    session = scripted_run(indexer, simulate=False)

    assert hosted.simulate_actions(str(session.pk), actor=SYSTEM) == "skipped"
    assert not session.messages.filter(system_type="ACTIONS_EXECUTED").exists()


def test_the_demo_automation_runs_on_a_server_made_scripted_profile():
    load_seed_manifests()

    demo.load(StringIO())

    automation = Automation.objects.get(name="Failed jobs review")
    profile = ProviderProfile.objects.get(name=demo.DEMO_PROFILE)
    assert automation.profile == profile
    assert (automation.provider, profile.created_by) == ("scripted", "system")
    assert profile.options["simulate_actions"] is True
    assert automation.next_run_at <= timezone.now()  # due at once: the inbox fills itself
    event = AuditEvent.objects.get(action="automation.created", target_id=str(automation.pk))
    assert event.actor == "system"
