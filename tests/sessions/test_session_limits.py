"""Per-agent session limits: a manifest's `sessions:` block overrides the SESSION_* settings
(round trips, inactivity), and an agent whose manifest says nothing runs under the settings."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from agents.manifest import read_text
from agents.models import AgentManifest
from agents.registry import load_manifest
from governance.kernel.principals import SYSTEM
from sessions import scheduler
from sessions.models import AISession
from tests.support.api import Api
from tests.support.manifests import manifest_text

pytestmark = pytest.mark.django_db

QUERY = {"type": "AGENTS", "params": {}}


def with_sessions_block(agent_id: str, **block: Any) -> None:
    """A new version of the shipped manifest whose `sessions:` block says ``block``."""
    document = read_text(manifest_text(agent_id))
    document.update(version="1.6.0", sessions=block)
    load_manifest(document, actor=SYSTEM)


def automation_session(api: Api) -> str:
    created = api.post("/sessions", {"type": "AUTOMATION", "name": "Nightly"})
    assert created.status_code == 201, created.content
    assert created.json()["phase"] == "CALLING_AI"
    return created.json()["sessionId"]


def ask_for_data(api: Api, session_id: str) -> dict:
    """One round trip: the model asks for the platform's agents, which the server answers."""
    content = json.dumps({"preText": "Looking around.", "dataCommands": [QUERY]})
    response = api.post(
        f"/sessions/{session_id}/events", {"type": "AIResponseReceived", "payload": {"content": content}}
    )
    assert response.status_code == 200, response.content
    return response.json()["state"]


def test_the_manifest_round_trip_limit_stops_an_automation_before_the_setting_would(vlevel_api, settings):
    settings.SESSION_AUTOMATION_MAX_ROUNDTRIPS = 20
    with_sessions_block("agent.seo.vlevel", automation_max_autonomous_roundtrips=2)
    session_id = automation_session(vlevel_api)

    assert ask_for_data(vlevel_api, session_id)["phase"] == "CALLING_AI"
    state = ask_for_data(vlevel_api, session_id)

    assert (state["phase"], state["totalRoundtrips"]) == ("AWAITING_SESSION_CLOSURE", 2)
    assert AISession.objects.get(pk=session_id).pending_end_reason == "LIMIT_REACHED"
    limit = AISession.objects.get(pk=session_id).messages.get(system_type="LIMIT_REACHED")
    assert "Limit of 2 autonomous round trips" in limit.system_message["summary"]
    level1 = vlevel_api.get(f"/sessions/{session_id}/prompt").json()["level1Content"]
    assert "at most 2 round trips" in level1


def test_without_a_sessions_block_the_setting_applies(vlevel_api, settings):
    settings.SESSION_AUTOMATION_MAX_ROUNDTRIPS = 3
    session_id = automation_session(vlevel_api)

    for _ in range(2):
        assert ask_for_data(vlevel_api, session_id)["phase"] == "CALLING_AI"
    state = ask_for_data(vlevel_api, session_id)

    assert (state["phase"], state["totalRoundtrips"]) == ("AWAITING_SESSION_CLOSURE", 3)
    assert "at most 3 round trips" in vlevel_api.get(f"/sessions/{session_id}/prompt").json()["level1Content"]


def test_a_manifest_may_limit_chats_the_setting_leaves_unlimited(vlevel_api, settings):
    settings.SESSION_CHAT_MAX_ROUNDTRIPS = None
    with_sessions_block("agent.seo.vlevel", chat_max_autonomous_roundtrips=1)
    chat = vlevel_api.post("/sessions", {"type": "CHAT", "name": "Help"}).json()["sessionId"]
    vlevel_api.post(f"/sessions/{chat}/events", {"type": "UserMessageSent", "payload": {"text": "look around"}})

    state = ask_for_data(vlevel_api, chat)

    assert (state["phase"], state["isActive"]) == ("IDLE", True)  # a chat waits for its person
    assert AISession.objects.get(pk=chat).messages.filter(system_type="LIMIT_REACHED").exists()


def idle_automation(api: Api) -> str:
    session_id = automation_session(api)
    AISession.objects.filter(pk=session_id).update(phase="IDLE")
    return session_id


def test_the_watchdog_closes_an_agent_with_a_shorter_manifest_timeout_and_spares_the_others(
    vlevel_api, client, settings
):
    from tests.support.keys import issue_key
    from tests.support.manifests import load

    settings.SESSION_INACTIVITY_TIMEOUT_MINUTES = 30
    with_sessions_block("agent.seo.vlevel", inactivity_timeout_minutes=5)
    indexer_api = Api(client, issue_key(agent=load("agent.rag.indexer")))
    short, default = idle_automation(vlevel_api), idle_automation(indexer_api)

    assert scheduler.tick(now=timezone.now() + timedelta(minutes=6))["timeouts"] == 1

    assert AISession.objects.get(pk=short).pending_end_reason == "TIMEOUT"
    assert AISession.objects.get(pk=default).phase == "IDLE"
    assert scheduler.tick(now=timezone.now() + timedelta(minutes=31))["timeouts"] == 1
    assert AISession.objects.get(pk=default).pending_end_reason == "TIMEOUT"


def test_a_longer_manifest_timeout_keeps_the_session_past_the_setting(vlevel_api, settings):
    settings.SESSION_INACTIVITY_TIMEOUT_MINUTES = 30
    with_sessions_block("agent.seo.vlevel", inactivity_timeout_minutes=120)
    session_id = idle_automation(vlevel_api)

    assert scheduler.tick(now=timezone.now() + timedelta(minutes=31))["timeouts"] == 0
    assert AISession.objects.get(pk=session_id).phase == "IDLE"
    assert scheduler.tick(now=timezone.now() + timedelta(minutes=121))["timeouts"] == 1


@pytest.mark.parametrize(
    ("block", "loc"),
    [
        ({"automation_max_autonomous_roundtrips": 0}, ["body", "sessions", "automation_max_autonomous_roundtrips"]),
        ({"inactivity_timeout_minutes": -1}, ["body", "sessions", "inactivity_timeout_minutes"]),
        ({"max_round_trips": 5}, ["body", "sessions", "max_round_trips"]),
        ({"always_send": [{"type": "AGENTS", "params": "all"}]}, ["body", "sessions", "always_send", 0, "params"]),
    ],
)
def test_an_invalid_sessions_block_is_422_with_its_path(admin_api, block, loc):
    document = read_text(manifest_text("agent.seo.vlevel"))
    response = admin_api.put("/agents/agent.seo.vlevel/manifest", {**document, "sessions": block})

    assert response.status_code == 422, response.content
    assert loc in [error["loc"] for error in response.json()["errors"]]
    assert not AgentManifest.objects.exists()
