"""An agent creating automations in a loop meets its quota: 429, nothing written past it."""

from __future__ import annotations

import pytest

from agents.manifest import read_text
from agents.registry import load_manifest
from governance.kernel.principals import SYSTEM
from sessions.models import AISession, Automation
from tests.support.manifests import manifest_text
from tests.support.refusals import nothing_written

AUTOMATION = {"name": "loop", "trigger": "MANUAL", "messages": [{"text": "again"}]}


@pytest.mark.django_db
def test_automations_past_the_setting_are_429_and_write_nothing(vlevel_api, settings):
    settings.AGENT_MAX_AUTOMATIONS = 3
    for _ in range(3):
        assert vlevel_api.post("/automations", AUTOMATION).status_code == 201

    with nothing_written():
        refused = vlevel_api.post("/automations", AUTOMATION)

    assert refused.status_code == 429
    assert refused["Retry-After"]
    assert (refused.json()["quota"], refused.json()["limit"]) == ("automations", 3)
    assert Automation.objects.count() == 3
    assert AISession.objects.filter(type="SEED").count() == 3


@pytest.mark.django_db
def test_the_manifest_overrides_the_setting(vlevel_api, settings):
    settings.AGENT_MAX_AUTOMATIONS = 50
    document = read_text(manifest_text("agent.seo.vlevel"))
    load_manifest({**document, "version": "1.1.0", "quotas": {"automations": 1}}, actor=SYSTEM)

    assert vlevel_api.post("/automations", AUTOMATION).status_code == 201
    assert vlevel_api.post("/automations", AUTOMATION).status_code == 429


@pytest.mark.django_db
def test_a_quota_in_a_manifest_must_be_a_sane_number(admin_api):
    document = read_text(manifest_text("agent.seo.vlevel"))
    response = admin_api.put("/agents/agent.seo.vlevel/manifest", {**document, "quotas": {"automations": -1}})

    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"][:3] == ["body", "quotas", "automations"]


@pytest.mark.django_db
def test_queued_automation_sessions_past_the_quota_are_429(vlevel_api, settings):
    settings.AGENT_MAX_QUEUED_SESSIONS = 2
    chat = vlevel_api.post("/sessions", {"type": "CHAT", "name": "holds the slot"})
    assert chat.status_code == 201
    for _ in range(2):
        assert vlevel_api.post("/sessions", {"type": "AUTOMATION", "name": "later"}).status_code == 201

    with nothing_written():
        refused = vlevel_api.post("/sessions", {"type": "AUTOMATION", "name": "one too many"})

    assert refused.status_code == 429
    assert refused.json()["quota"] == "queued_sessions"
    automation = vlevel_api.post("/automations", AUTOMATION).json()
    assert vlevel_api.post(f"/automations/{automation['id']}/execute").status_code == 429
    assert AISession.objects.filter(type="AUTOMATION").count() == 2
