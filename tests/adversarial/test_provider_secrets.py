"""A hostile agent against hosted automations: it must not choose where the server sends its keys,
read internal answers back, or fabricate results; and a provider key must end up at the provider
and nowhere else (not in a row, not in a log line).

The fake model server is a real HTTP server in a thread on 127.0.0.1, so every call goes through
the real outbound guard, http.client and the real processor.
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

import pytest
from django.apps import apps
from django.db import connection

from governance.kernel.principals import SYSTEM, Principal
from sessions import hosted, profiles
from sessions.models import AISession, Automation, ProviderProfile
from tests.support.api import Api
from tests.support.hosted import PROFILE, allow_profiles, hosted_run, local_profile
from tests.support.refusals import nothing_written

pytestmark = pytest.mark.django_db

INTERNAL_SECRET = "INTERNAL-ONLY-9f2c1b: db.internal:5432 admin password hunter2"


# --- what an agent may not send -------------------------------------------------------------------


def test_an_agent_cannot_aim_a_server_secret_at_its_own_url(vlevel_api, model_server):
    body = {
        "name": "exfiltrate",
        "trigger": "MANUAL",
        "messages": [{"text": "hello"}],
        "provider": "openai",
        "providerConfig": {"api_key_env": "DATABASE_URL", "base_url": model_server.url, "model": "x"},
    }
    automations_before, sessions_before = Automation.objects.count(), AISession.objects.count()

    with nothing_written():
        response = vlevel_api.post("/automations", body)

    assert response.status_code == 422
    locations = [error["loc"] for error in response.json()["errors"]]
    assert ["body", "providerConfig", "api_key_env"] in locations
    assert ["body", "providerConfig", "base_url"] in locations
    assert (Automation.objects.count(), AISession.objects.count()) == (automations_before, sessions_before)
    assert model_server.received == []


@pytest.mark.parametrize("caller", ["vlevel_api", "admin_api"])
def test_nobody_chooses_the_scripted_provider_over_the_api(request, caller, vlevel):
    api: Api = request.getfixturevalue(caller)
    profiles.create_profile(actor=SYSTEM, name="demo-script", provider="scripted", options={"responses": ["{}"]})
    allow_profiles("agent.seo.vlevel", "demo-script")
    base = {"name": "fake results", "agentId": "agent.seo.vlevel", "trigger": "MANUAL", "messages": [{"text": "x"}]}

    with nothing_written():
        by_provider = api.post("/automations", {**base, "provider": "scripted"})
        by_profile = api.post("/automations", {**base, "providerProfile": "demo-script"})
        new_profile = api.post("/automations/provider-profiles", {"name": "mine", "provider": "scripted", "model": "x"})

    assert by_provider.status_code == 422
    assert ["body", "provider"] in [error["loc"] for error in by_provider.json()["errors"]]
    assert by_profile.status_code == 422
    assert [error["loc"] for error in by_profile.json()["errors"]] == [["body", "providerProfile"]]
    assert new_profile.status_code == 422  # the schema knows no scripted provider


def test_an_agent_cannot_create_provider_profiles(vlevel_api, model_server):
    with nothing_written():
        response = vlevel_api.post(
            "/automations/provider-profiles",
            {"name": "mine", "provider": "openai", "model": "x", "baseUrl": model_server.url, "internal": True},
        )

    assert response.status_code == 403


# --- where a profile may point --------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1",
        "https://127.0.0.1",
        "http://169.254.169.254",
        "https://169.254.169.254/latest/meta-data",
        "http://10.0.0.1",
        "https://10.0.0.1",
        "https://localhost",
        "https://[::1]",
        "https://[::ffff:127.0.0.1]",
    ],
)
def test_a_profile_aimed_at_an_internal_address_is_refused_unless_internal(admin_api, url):
    body = {
        "name": "probe",
        "provider": "openai",
        "model": "gpt-test",
        "baseUrl": url,
        "secretName": "PROVIDER_KEY_OPENAI",
    }

    with nothing_written():
        response = admin_api.post("/automations/provider-profiles", body)

    assert response.status_code == 422
    assert [error["loc"] for error in response.json()["errors"]] == [["body", "baseUrl"]]
    internal = admin_api.post("/automations/provider-profiles", {**body, "internal": True})
    metadata = "169.254.169.254" in url
    assert internal.status_code == (422 if metadata else 201), internal.content  # metadata: never


@pytest.mark.parametrize("internal", [False, True])
@pytest.mark.parametrize("url", ["file:///etc/passwd", "file:///proc/self/environ", "ftp://10.0.0.1/", "gopher://x"])
def test_a_profile_with_another_scheme_is_always_refused(admin_api, url, internal):
    body = {"name": "probe", "provider": "openai", "model": "m", "baseUrl": url, "internal": internal}

    response = admin_api.post("/automations/provider-profiles", body)

    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["body", "baseUrl"]
    assert not ProviderProfile.objects.exists()


def test_a_profile_whose_address_turned_internal_is_refused_at_call_time(vlevel_api, model_server):
    """Saved as internal, then the flag switched off by a hand edit of the row: the call-time
    check still refuses, and nothing reaches the server."""
    local_profile(model_server.url)
    allow_profiles("agent.seo.vlevel", PROFILE)
    session_id = hosted_run(vlevel_api)
    ProviderProfile.objects.filter(name=PROFILE).update(internal=False)

    hosted.call_provider(session_id, actor=SYSTEM)

    assert model_server.received == []
    summaries = [m["systemMessage"]["summary"] for m in messages(vlevel_api, session_id) if m["systemMessage"]]
    assert summaries[-1] == "AI provider error: refused_address"


# --- what comes back ------------------------------------------------------------------------------


def messages(api: Api, session_id: str) -> list[dict[str, Any]]:
    response = api.get(f"/sessions/{session_id}/messages")
    assert response.status_code == 200
    return response.json()["items"]


def test_a_provider_error_body_never_reaches_the_agent(vlevel_api, model_server):
    local_profile(model_server.url)
    allow_profiles("agent.seo.vlevel", PROFILE)
    session_id = hosted_run(vlevel_api)
    model_server.status, model_server.body = 401, {"error": {"message": INTERNAL_SECRET}}

    hosted.call_provider(session_id, actor=SYSTEM)

    listed = messages(vlevel_api, session_id)
    state = vlevel_api.get(f"/sessions/{session_id}")
    assert len(model_server.received) == 1
    assert listed[-1]["systemMessage"]["summary"] == "AI provider error: http_status (HTTP 401)"
    assert AISession.objects.get(pk=session_id).pending_end_reason == "ERROR"  # a refusal ends the run
    for text in (json.dumps(listed), state.content.decode()):
        assert "INTERNAL-ONLY" not in text
        assert "hunter2" not in text


def test_a_profile_the_manifest_does_not_list_is_refused_to_the_agent(vlevel_api, model_server):
    local_profile(model_server.url)
    body = {"name": "n", "trigger": "MANUAL", "messages": [{"text": "x"}], "providerProfile": PROFILE}

    with nothing_written():
        refused = vlevel_api.post("/automations", body)
        unknown = vlevel_api.post("/automations", {**body, "providerProfile": "no-such-profile"})

    assert refused.status_code == 403
    assert unknown.status_code == 422
    assert [error["loc"] for error in unknown.json()["errors"]] == [["body", "providerProfile"]]


# --- the secret goes to the provider, and only there ---------------------------------------------


def every_row() -> str:
    """Every row of every table: each Django model's values, then every table as PostgreSQL sees
    it (tables without a model included)."""
    dumped = [
        json.dumps(list(model._default_manager.values()), default=str)
        for model in apps.get_models(include_auto_created=True)
    ]
    with connection.cursor() as cursor:
        cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
        for (table,) in cursor.fetchall():
            cursor.execute(f"SELECT coalesce(string_agg(t::text, '|'), '') FROM {connection.ops.quote_name(table)} t")
            dumped.append(cursor.fetchone()[0])
    return "\n".join(dumped)


@pytest.mark.parametrize("via_file", [False, True], ids=["env", "env_file"])
def test_the_provider_key_reaches_the_provider_and_nothing_else(
    vlevel_api, admin_operator, model_server, monkeypatch, settings, tmp_path, caplog, via_file
):
    secret = f"sk-scan-{uuid.uuid4().hex}"
    settings.CREDENTIALS_DIR = tmp_path
    if via_file:
        (tmp_path / "key").write_text(secret + "\n", encoding="utf-8")
        monkeypatch.setenv("PROVIDER_KEY_SCAN_FILE", str(tmp_path / "key"))
    else:
        monkeypatch.setenv("PROVIDER_KEY_SCAN", secret)
    caplog.set_level(logging.DEBUG)
    profiles.create_profile(
        actor=Principal(user=admin_operator),
        name=PROFILE,
        provider="openai",
        model="gpt-test",
        base_url=f"{model_server.url}/v1",
        secret_name="PROVIDER_KEY_SCAN",
        internal=True,
    )
    allow_profiles("agent.seo.vlevel", PROFILE)
    session_id = hosted_run(vlevel_api)
    model_server.status, model_server.body = 401, None  # echo the Authorization header back

    assert hosted.call_provider(session_id, actor=SYSTEM) == "SystemErrorOccurred"

    assert [request["authorization"] for request in model_server.received] == [f"Bearer {secret}"]
    logged = caplog.text + "\n".join(f"{r.getMessage()} {r.args!r} {r.exc_text}" for r in caplog.records)
    assert "invalid credentials: Bearer [redacted]" in logged  # the detail is logged, scrubbed
    assert secret not in logged
    assert secret not in every_row()
    assert secret not in json.dumps(messages(vlevel_api, session_id))


@pytest.mark.django_db
def test_an_answer_the_platform_cannot_store_ends_the_turn_instead_of_hanging(vlevel_api, model_server):
    local_profile(model_server.url)
    allow_profiles("agent.seo.vlevel", PROFILE)
    session_id = hosted_run(vlevel_api)
    answer = {"choices": [{"message": {"role": "assistant", "content": "nul \u0000 byte"}}], "usage": {}}
    model_server.status, model_server.body = 200, answer

    outcome = hosted.call_provider(session_id, actor=SYSTEM)

    session = AISession.objects.get(pk=session_id)
    assert outcome == "SystemErrorOccurred"
    assert session.phase != "CALLING_AI"
    summaries = [m.system_message["summary"] for m in session.messages.exclude(system_message=None)]
    assert any("invalid_response" in summary for summary in summaries)


# --- which variables a profile may name -------------------------------------------------------------


@pytest.mark.parametrize(
    "secret_name",
    [
        "EMAIL_HOST_PASSWORD",
        "EMBEDDING_API_KEY",
        "OTEL_EXPORTER_OTLP_HEADERS",
        "AWS_SECRET_ACCESS_KEY",
        "OPENAI_API_KEY",
        "PROVIDER_KEY_",
    ],
)
def test_a_profile_names_only_a_provider_key_variable(admin_api, secret_name):
    """An allow-list, not a deny-list: every platform secret the deny-list forgot (mail, embedding,
    tracing headers) was sendable as a Bearer token."""
    body = {"name": "probe", "provider": "openai", "model": "m", "baseUrl": "https://10.0.0.1/v1", "internal": True}

    with nothing_written():
        response = admin_api.post("/automations/provider-profiles", {**body, "secretName": secret_name})

    assert response.status_code == 422
    error = response.json()["errors"][0]
    assert error["loc"] == ["body", "secretName"]
    assert "PROVIDER_KEY_" in error["msg"]
    allowed = admin_api.post("/automations/provider-profiles", {**body, "secretName": "PROVIDER_KEY_OPENAI"})
    assert allowed.status_code == 201, allowed.content


def test_a_row_naming_a_platform_secret_sends_nothing(vlevel_api, model_server, monkeypatch):
    """A row written before the allow-list (or by hand) that names a platform secret: the profile
    is unusable and nothing goes out, so the secret never reaches the URL the row points at."""
    monkeypatch.setenv("EMAIL_HOST_PASSWORD", "smtp-password-never-sent")
    local_profile(model_server.url)
    ProviderProfile.objects.filter(name=PROFILE).update(secret_name="EMAIL_HOST_PASSWORD")
    allow_profiles("agent.seo.vlevel", PROFILE)
    session_id = hosted_run(vlevel_api)

    assert hosted.call_provider(session_id, actor=SYSTEM) == "SystemErrorOccurred"

    assert model_server.received == []
    assert ProviderProfile.objects.get(name=PROFILE).secret_status == "not allowed"


def test_a_key_file_is_read_only_from_the_credentials_directory(
    vlevel_api, model_server, monkeypatch, settings, tmp_path
):
    """``PROVIDER_KEY_X_FILE`` may point only into CREDENTIALS_DIR: a path elsewhere (the server's
    own secret key file, say) is not read, whoever set the variable."""
    outside = tmp_path / "secret_key"
    outside.write_text("server-secret-key-never-sent\n", encoding="utf-8")
    settings.CREDENTIALS_DIR = tmp_path / "credentials"
    monkeypatch.setenv("PROVIDER_KEY_SCAN_FILE", str(outside))
    local_profile(model_server.url, secret_name="PROVIDER_KEY_SCAN")
    allow_profiles("agent.seo.vlevel", PROFILE)
    session_id = hosted_run(vlevel_api)

    assert hosted.call_provider(session_id, actor=SYSTEM) == "SystemErrorOccurred"

    assert model_server.received == []
    assert ProviderProfile.objects.get(name=PROFILE).secret_status == "missing"
