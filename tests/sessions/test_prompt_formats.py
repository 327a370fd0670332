"""Provider-ready prompts: a request never ends on the model's own turn, and agent authors get
the exact turns the hosted sessions send (`GET /sessions/{id}/prompt?format=`)."""

from __future__ import annotations

import json

import pytest

from sessions.providers.anthropic import claude_messages
from sessions.providers.base import PromptData, PromptMessage
from sessions.providers.openai import CONTINUE, chat_messages

ENDS_ON_THE_MODEL = PromptData(
    "L1", "L2", [PromptMessage("USER", "audit the shop"), PromptMessage("AI", '{"preText": "done"}')]
)


def test_an_openai_request_never_ends_on_an_assistant_turn():
    messages = chat_messages(ENDS_ON_THE_MODEL)

    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[-1]["content"] == CONTINUE


def test_an_anthropic_request_never_ends_on_an_assistant_turn_and_keeps_its_breakpoint():
    messages = claude_messages(ENDS_ON_THE_MODEL)

    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[-1]["content"] == [{"type": "text", "text": CONTINUE, "cache_control": {"type": "ephemeral"}}]


def test_a_history_already_ending_with_the_user_gets_no_extra_turn():
    data = PromptData("L1", "L2", [PromptMessage("AI", "hello"), PromptMessage("USER", "hi")])
    assert [m["content"] for m in chat_messages(data)][-1] == "hi"


@pytest.fixture
def answered_chat(vlevel_api) -> str:
    session_id = vlevel_api.post("/sessions", {"type": "CHAT", "name": "formats"}).json()["sessionId"]
    vlevel_api.post(f"/sessions/{session_id}/events", {"type": "UserMessageSent", "payload": {"text": "hello"}})
    answer = json.dumps({"preText": "Hi! What should I audit?"})
    vlevel_api.post(f"/sessions/{session_id}/events", {"type": "AIResponseReceived", "payload": {"content": answer}})
    return session_id


@pytest.mark.django_db
def test_the_prompt_in_openai_format_is_what_a_hosted_call_sends(vlevel_api, answered_chat):
    body = vlevel_api.get(f"/sessions/{answered_chat}/prompt", {"format": "openai"}).json()

    assert body["system"] == f"{body['level1Content']}\n\n{body['level2Content']}"
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][0]["content"] == "hello"
    assert body["messages"][-1]["content"] == CONTINUE


@pytest.mark.django_db
def test_the_prompt_in_anthropic_format_carries_three_cache_breakpoints(vlevel_api, answered_chat):
    body = vlevel_api.get(f"/sessions/{answered_chat}/prompt", {"format": "anthropic"}).json()

    assert [block["text"] for block in body["system"]] == [body["level1Content"], body["level2Content"]]
    assert json.dumps(body).count('"cache_control"') == 3
    assert body["messages"][-1]["role"] == "user"


@pytest.mark.django_db
def test_without_format_the_prompt_is_the_plain_prompt_data(vlevel_api, answered_chat):
    body = vlevel_api.get(f"/sessions/{answered_chat}/prompt").json()
    assert body["messages"] is None
    assert vlevel_api.get(f"/sessions/{answered_chat}/prompt", {"format": "gemini"}).status_code == 422
