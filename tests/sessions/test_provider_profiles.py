"""Provider profiles as operators manage them (API and admin), and automations that name them.

Profiles here point at public IP literals (no DNS needed) or, marked internal, at loopback: the
outbound guard itself is tested in test_outbound.py and tests/adversarial/test_provider_secrets.py.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents.manifest import read_text
from agents.registry import load_manifest
from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM
from sessions import profiles
from sessions.models import Automation, ProviderProfile
from tests.support.manifests import manifest_text

pytestmark = pytest.mark.django_db

PUBLIC = "https://93.184.216.34/v1"
PROFILE_BODY = {"name": "openai-main", "provider": "openai", "model": "gpt-4o", "baseUrl": PUBLIC}
AUTOMATION = {"name": "nightly", "trigger": "MANUAL", "messages": [{"text": "audit"}]}


def make_profile(name: str = "openai-main", **fields: object) -> ProviderProfile:
    values = {"provider": "openai", "model": "gpt-4o", "base_url": PUBLIC, **fields}
    return profiles.create_profile(actor=SYSTEM, name=name, **values)


def allow_profiles(*names: str) -> None:
    document = read_text(manifest_text("agent.seo.vlevel"))
    document.update(version="1.5.0", provider_profiles=list(names))
    load_manifest(document, actor=SYSTEM)


# --- the API --------------------------------------------------------------------------------------


def test_an_operator_creates_a_profile_naming_a_secret_variable(admin_api, monkeypatch):
    monkeypatch.setenv("PROVIDER_KEY_OPENAI_MAIN", "sk-never-shown")

    response = admin_api.post(
        "/automations/provider-profiles", {**PROFILE_BODY, "secretName": "PROVIDER_KEY_OPENAI_MAIN"}
    )

    assert response.status_code == 201, response.content
    assert response.json()["secretStatus"] == "set"
    assert "sk-never-shown" not in response.content.decode()
    event = AuditEvent.objects.get(action="provider_profile.created")
    assert (event.actor, event.data["secret_name"], event.data["base_url"]) == (
        "user:alice",
        "PROVIDER_KEY_OPENAI_MAIN",
        PUBLIC,
    )
    assert "sk-never-shown" not in str(event.data)


def test_operators_list_profiles_and_agents_do_not(admin_api, viewer_api, vlevel_api):
    make_profile()

    assert [p["name"] for p in admin_api.get("/automations/provider-profiles").json()] == ["openai-main"]
    assert viewer_api.get("/automations/provider-profiles").status_code == 200
    assert vlevel_api.get("/automations/provider-profiles").status_code == 403


def test_a_viewer_cannot_create_a_profile(viewer_api):
    response = viewer_api.post("/automations/provider-profiles", PROFILE_BODY)

    assert response.status_code == 403
    assert not ProviderProfile.objects.exists()


@pytest.mark.parametrize("key", ["base_url", "api_key", "api_key_env", "url", "internal", "organization"])
def test_options_cannot_carry_a_url_a_key_or_anything_unknown(admin_api, key):
    response = admin_api.post("/automations/provider-profiles", {**PROFILE_BODY, "options": {key: "x"}})

    assert response.status_code == 422
    assert [error["loc"] for error in response.json()["errors"]] == [["body", "options", key]]
    assert key in response.json()["errors"][0]["msg"]


@pytest.mark.parametrize("secret_name", ["sk-proj-abc123", "DATABASE_URL", "SECRET_KEY", "OPENAI_KEY_FILE"])
def test_the_secret_name_is_a_variable_name_never_a_key_nor_a_platform_secret(admin_api, secret_name):
    response = admin_api.post("/automations/provider-profiles", {**PROFILE_BODY, "secretName": secret_name})

    assert response.status_code == 422
    assert [error["loc"] for error in response.json()["errors"]] == [["body", "secretName"]]


def test_a_literal_key_field_is_refused(admin_api):
    response = admin_api.post("/automations/provider-profiles", {**PROFILE_BODY, "apiKey": "sk-literal"})

    assert response.status_code == 422
    assert not ProviderProfile.objects.exists()


# --- automations naming a profile -----------------------------------------------------------------


def test_an_agent_hosts_its_automation_on_a_profile_its_manifest_lists(vlevel_api):
    make_profile()
    allow_profiles("openai-main")

    response = vlevel_api.post("/automations", {**AUTOMATION, "providerProfile": "openai-main"})

    assert response.status_code == 201, response.content
    assert (response.json()["provider"], response.json()["providerProfile"]) == ("openai", "openai-main")
    automation = Automation.objects.get(pk=response.json()["id"])
    event = AuditEvent.objects.get(action="automation.created")
    assert (event.actor, event.target_id, event.data["profile"]) == (
        "agent:agent.seo.vlevel",
        str(automation.pk),
        "openai-main",
    )


def test_an_operator_may_use_any_enabled_profile(admin_api, vlevel):
    make_profile()

    response = admin_api.post(
        "/automations", {**AUTOMATION, "agentId": "agent.seo.vlevel", "providerProfile": "openai-main"}
    )

    assert response.status_code == 201, response.content
    assert response.json()["provider"] == "openai"


def test_a_disabled_profile_cannot_be_named(admin_api, vlevel):
    make_profile(enabled=False)

    response = admin_api.post(
        "/automations", {**AUTOMATION, "agentId": "agent.seo.vlevel", "providerProfile": "openai-main"}
    )

    assert response.status_code == 422
    assert [error["loc"] for error in response.json()["errors"]] == [["body", "providerProfile"]]
    assert not Automation.objects.exists()


def test_an_automation_without_a_profile_is_driven_by_the_agent(vlevel_api):
    response = vlevel_api.post("/automations", AUTOMATION)

    assert response.status_code == 201
    assert (response.json()["provider"], response.json()["providerProfile"]) == ("", None)


# --- the admin ------------------------------------------------------------------------------------


def test_the_admin_shows_whether_the_secret_is_set_never_its_value(admin_client, monkeypatch):
    monkeypatch.setenv("PROVIDER_KEY_OPENAI_MAIN", "sk-admin-never-shown")
    profile = make_profile(secret_name="PROVIDER_KEY_OPENAI_MAIN")
    make_profile("unset-key", secret_name="PROVIDER_KEY_NOBODY_SET")

    listing = admin_client.get(reverse("admin:ai_sessions_providerprofile_changelist")).content.decode()
    page = admin_client.get(reverse("admin:ai_sessions_providerprofile_change", args=[profile.pk])).content.decode()

    assert '<td class="field-secret">set</td>' in listing
    assert '<td class="field-secret">missing</td>' in listing
    assert "sk-admin-never-shown" not in listing + page


def test_the_admin_creates_profiles_through_the_guard_and_audits_them(admin_client):
    url = reverse("admin:ai_sessions_providerprofile_add")
    form = {
        "name": "local",
        "provider": "ollama",
        "model": "llama3",
        "base_url": "http://127.0.0.1:11434",
        "secret_name": "",
        "options": "{}",
        "enabled": "on",
    }

    refused = admin_client.post(url, form)
    scripted = admin_client.post(url, {**form, "provider": "scripted", "base_url": ""})
    accepted = admin_client.post(url, {**form, "internal": "on"})

    assert refused.status_code == 200
    assert "plain http is allowed only for an internal profile" in refused.content.decode()
    assert scripted.status_code == 200  # not a choice: scripted profiles are made by the server
    assert accepted.status_code == 302
    profile = ProviderProfile.objects.get()
    assert (profile.name, profile.internal, profile.created_by) == ("local", True, "user:admin")
    assert AuditEvent.objects.filter(action="provider_profile.created", target_id=str(profile.pk)).exists()


def test_the_admin_hosts_an_automation_on_a_profile_through_the_service(admin_client, vlevel_api):
    profile = make_profile()
    automation = Automation.objects.get(pk=vlevel_api.post("/automations", AUTOMATION).json()["id"])
    url = reverse("admin:ai_sessions_automation_change", args=[automation.pk])

    response = admin_client.post(url, {"enabled": "on", "trigger": "MANUAL", "profile": str(profile.pk)})

    assert response.status_code == 302
    automation.refresh_from_db()
    assert automation.profile == profile
    event = AuditEvent.objects.get(action="automation.changed")
    assert event.data["fields"]["profile"] == "openai-main"


def test_a_profile_taken_out_of_the_manifest_stops_the_agents_hosted_calls(vlevel_api):
    from sessions import hosted
    from sessions.models import AISession

    make_profile("local", base_url="http://127.0.0.1:9/v1", internal=True)  # nothing listens there
    allow_profiles("local")
    automation = vlevel_api.post("/automations", {**AUTOMATION, "providerProfile": "local"}).json()
    document = read_text(manifest_text("agent.seo.vlevel"))
    load_manifest({**document, "version": "1.6.0", "provider_profiles": []}, actor=SYSTEM)

    session_id = vlevel_api.post(f"/automations/{automation['id']}/execute").json()["sessionId"]
    assert AISession.objects.get(pk=session_id).phase == "CALLING_AI"
    hosted.call_provider(session_id, actor=SYSTEM)

    texts = [
        m["systemMessage"]["summary"]
        for m in vlevel_api.get(f"/sessions/{session_id}/messages").json()["items"]
        if m["systemMessage"]
    ]
    assert any("configuration" in text for text in texts), texts  # refused before any connection was tried
    assert not any("network" in text for text in texts)
