"""Hosted runs record what the provider said of each answer: the AI message's executionMetadata
(seed 003: model, provider, token usage, durations) and the session's providerSessionId. The model
is a real HTTP server on 127.0.0.1 (tests/support/hosted.py)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from governance.kernel.principals import SYSTEM
from sessions import hosted
from sessions.models import AISession, ProviderCall, SessionMessage
from sessions.providers import anthropic, ollama
from tests.support.hosted import PROFILE, allow_profiles, hosted_run, local_profile, openai_answer

pytestmark = pytest.mark.django_db

QUERY = json.dumps({"preText": "Looking.", "dataCommands": [{"type": "AGENTS", "params": {}}]})
DONE = json.dumps({"preText": "Done.", "completed": True})


def answer(content: str, response_id: str) -> dict:
    body = openai_answer(content, output_tokens=9)
    body["choices"][0]["finish_reason"] = "stop"
    return {**body, "id": response_id, "model": "gpt-test-2026-01-01"}


@pytest.fixture
def session_id(vlevel_api, model_server) -> str:
    local_profile(model_server.url)
    allow_profiles("agent.seo.vlevel", PROFILE)
    model_server.body = answer(QUERY, "chatcmpl-first")
    return hosted_run(vlevel_api)


def ai_messages(session_id: str) -> list[SessionMessage]:
    return list(AISession.objects.get(pk=session_id).messages.filter(sender="AI").order_by("seq"))


def last_ai(session_id: str) -> SessionMessage:
    return ai_messages(session_id)[-1]


def test_another_agent_sees_neither_the_session_nor_its_metadata(session_id, other_agent_api, model_server):
    hosted.call_provider(session_id, actor=SYSTEM)

    assert other_agent_api.get(f"/sessions/{session_id}").status_code == 404
    assert other_agent_api.get(f"/sessions/{session_id}/messages").status_code == 404


def test_an_answer_carries_its_execution_metadata_and_names_the_provider_session(session_id, vlevel_api, model_server):
    assert hosted.call_provider(session_id, actor=SYSTEM) == "answered"

    metadata = last_ai(session_id).execution_metadata
    assert {key: metadata[key] for key in ("provider", "profile", "model", "providerSessionId", "stopReason")} == {
        "provider": "openai",
        "profile": PROFILE,
        "model": "gpt-test-2026-01-01",
        "providerSessionId": "chatcmpl-first",
        "stopReason": "stop",
    }
    assert metadata["tokens"] == {"input": 11, "output": 9, "cacheWrite": 0, "cacheRead": 0}
    assert metadata["tokensUsed"] == 20
    assert isinstance(metadata["durationMs"], int)
    assert metadata["durationMs"] >= 0
    assert (metadata["attempt"], metadata["turn"]) == (1, ProviderCall.objects.get().turn)

    state = vlevel_api.get(f"/sessions/{session_id}").json()
    assert (state["providerId"], state["providerSessionId"]) == ("openai", "chatcmpl-first")
    shown = vlevel_api.get(f"/sessions/{session_id}/messages").json()["items"]
    assert [m["executionMetadata"]["providerSessionId"] for m in shown if m["sender"] == "AI"] == ["chatcmpl-first"]


def test_each_turn_has_its_own_metadata_and_the_session_follows_the_latest_answer(session_id, model_server):
    hosted.call_provider(session_id, actor=SYSTEM)  # asks for data: the server answers, then it is the model's turn
    model_server.body = answer(DONE, "chatcmpl-second")

    hosted.call_provider(session_id, actor=SYSTEM)

    ids = [m.execution_metadata["providerSessionId"] for m in ai_messages(session_id)]
    assert ids == ["chatcmpl-first", "chatcmpl-second"]
    assert AISession.objects.get(pk=session_id).provider_session_id == "chatcmpl-second"


def test_a_stored_answer_applied_by_a_redelivered_task_keeps_its_metadata(session_id, model_server):
    stored = {"provider": "openai", "model": "gpt-test", "providerSessionId": "chatcmpl-stored", "durationMs": 812}
    ProviderCall.objects.create(
        session_id=session_id,
        turn=AISession.objects.get(pk=session_id).messages.latest("seq").seq,
        status="answered",
        attempts=1,
        started_at=timezone.now() - timedelta(seconds=5),
        finished_at=timezone.now(),
        content=DONE,
        tokens={"input": 3, "output": 4, "cacheWrite": 0, "cacheRead": 0},
        metadata=stored,
    )

    assert hosted.call_provider(session_id, actor=SYSTEM) == "answered"

    assert model_server.received == []
    assert last_ai(session_id).execution_metadata == stored
    assert AISession.objects.get(pk=session_id).provider_session_id == "chatcmpl-stored"


def test_a_provider_without_an_answer_id_leaves_the_provider_session_empty(session_id, model_server):
    model_server.body = openai_answer(DONE)

    hosted.call_provider(session_id, actor=SYSTEM)

    assert "providerSessionId" not in last_ai(session_id).execution_metadata
    assert AISession.objects.get(pk=session_id).provider_session_id == ""


def test_anthropic_and_ollama_answers_say_what_they_know():
    claude = anthropic.parse_response(
        {
            "id": "msg_01",
            "model": "claude-test",
            "stop_reason": "end_turn",
            "content": [{"type": "text", "text": "hi"}],
            "usage": {"input_tokens": 5, "output_tokens": 2},
        }
    )
    assert (claude.response_id, claude.model, claude.stop_reason) == ("msg_01", "claude-test", "end_turn")

    local = ollama.parse_response(
        {"model": "llama3", "message": {"content": "hi"}, "done_reason": "stop", "total_duration": 1_500_000_000}
    )
    assert (local.response_id, local.model, local.stop_reason, local.provider_duration_ms) == (
        "",
        "llama3",
        "stop",
        1500,
    )


def test_the_operator_sees_each_calls_metadata_on_the_session_admin_page(session_id, admin_client, model_server):
    from django.urls import reverse

    hosted.call_provider(session_id, actor=SYSTEM)

    page = admin_client.get(reverse("admin:ai_sessions_aisession_change", args=[session_id])).content.decode()

    assert "chatcmpl-first" in page
    assert "gpt-test-2026-01-01" in page
