"""AI providers against real local HTTP servers: request shapes, answer parsing, error classification.

Every network provider talks to a ThreadingHTTPServer on 127.0.0.1 that records what it received and
answers canned JSON, so the whole path (JSON encoding, headers, the outbound guard, http.client, status
handling) is exercised. 127.0.0.1 is a loopback address: the configs say ``internal`` as an operator's
profile for a local model server would, and the guard's refusals are tested without it. No database
is needed.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from sessions.providers.anthropic import AnthropicProvider
from sessions.providers.base import HTTP_TIMEOUT_SECONDS, AIResponse, ErrorCategory, PromptData, PromptMessage
from sessions.providers.ollama import OllamaProvider
from sessions.providers.openai import OpenAIProvider
from sessions.providers.registry import PROVIDER_NAMES, get_provider
from sessions.providers.scripted import ScriptedProvider
from tests.support.http_servers import serving

API_KEY = "sk-test-SECRET-0123456789"
EPHEMERAL = {"type": "ephemeral"}

# The seed's fusion example (section 11): USER, SYSTEM, AI, SYSTEM, USER.
SEED_EXAMPLE = PromptData(
    level1_content="L1 documentation",
    level2_content="L2 always-send data",
    session_messages=[
        PromptMessage("USER", "Question"),
        PromptMessage("SYSTEM", "DATA_ADDED: enrichments"),
        PromptMessage("AI", "réponse"),
        PromptMessage("SYSTEM", "DATA_ADDED: queries"),
        PromptMessage("USER", "Autre"),
    ],
)

OPENAI_OK = {
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello from OpenAI"}}],
    "usage": {"prompt_tokens": 100, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 60}},
}
ANTHROPIC_OK = {
    "type": "message",
    "role": "assistant",
    "content": [{"type": "text", "text": "Hello "}, {"type": "text", "text": "from Claude"}],
    "usage": {
        "input_tokens": 12,
        "output_tokens": 5,
        "cache_creation_input_tokens": 300,
        "cache_read_input_tokens": 900,
    },
}
OLLAMA_OK = {
    "model": "llama3",
    "message": {"role": "assistant", "content": "Hello from Ollama"},
    "done": True,
    "prompt_eval_count": 42,
    "eval_count": 9,
}


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class FakeServer:
    """What the fixture server received, and what it will answer next."""

    url: str
    requests: list[Received] = field(default_factory=list)
    status: int = 200
    reply: Any = field(default_factory=dict)
    delay: float = 0.0
    extra_headers: dict[str, str] = field(default_factory=dict)

    def answer(self, reply: Any, status: int = 200, delay: float = 0.0, headers: dict[str, str] | None = None) -> None:
        self.reply, self.status, self.delay, self.extra_headers = reply, status, delay, headers or {}

    @property
    def last(self) -> Received:
        assert self.requests, "the server received no request"
        return self.requests[-1]


def _handler_for(state: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length", 0)))
            state.requests.append(
                Received("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(raw))
            )
            if state.delay:
                time.sleep(state.delay)
            reply = state.reply if isinstance(state.reply, bytes) else json.dumps(state.reply).encode()
            self.send_response(state.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(reply)))
            for name, value in state.extra_headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def server() -> Iterator[FakeServer]:
    state = FakeServer(url="")
    with serving(_handler_for(state)) as state.url:
        yield state


@pytest.fixture
def closed_port() -> int:
    """A port nothing listens on: bound then released, so connecting is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# What sessions/hosted.py builds from a profile marked internal (the servers listen on loopback).
LOCAL = {"internal": True}


def openai_config(url: str, **extra: Any) -> dict[str, Any]:
    return {"base_url": f"{url}/v1", "api_key": API_KEY, "model": "gpt-test", **LOCAL, **extra}


def anthropic_config(url: str, **extra: Any) -> dict[str, Any]:
    return {"base_url": url, "api_key": API_KEY, "model": "claude-test", **LOCAL, **extra}


def ollama_config(url: str, **extra: Any) -> dict[str, Any]:
    return {"base_url": url, "model": "llama3", **LOCAL, **extra}


def proxied_ollama_config(url: str, **extra: Any) -> dict[str, Any]:
    """Ollama behind an authenticating proxy: the only Ollama set-up with a key to keep secret."""
    return ollama_config(url, api_key=API_KEY, **extra)


NETWORK_PROVIDERS: list[tuple[Any, Callable[..., dict[str, Any]], dict[str, Any]]] = [
    (OpenAIProvider(), openai_config, OPENAI_OK),
    (AnthropicProvider(), anthropic_config, ANTHROPIC_OK),
    (OllamaProvider(), proxied_ollama_config, OLLAMA_OK),
]


@pytest.fixture(params=NETWORK_PROVIDERS, ids=lambda case: case[0].name)
def network_provider(request: pytest.FixtureRequest) -> tuple[Any, Callable[..., dict[str, Any]], dict[str, Any]]:
    return request.param


def count_cache_controls(value: Any) -> int:
    if isinstance(value, dict):
        return int("cache_control" in value) + sum(count_cache_controls(item) for item in value.values())
    if isinstance(value, list):
        return sum(count_cache_controls(item) for item in value)
    return 0


# --- OpenAI -------------------------------------------------------------------------------------


def test_openai_request_shape_fuses_user_side_messages(server: FakeServer) -> None:
    server.answer(OPENAI_OK)

    OpenAIProvider().query(SEED_EXAMPLE, openai_config(server.url, temperature=0.2, max_tokens=512))

    sent = server.last
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"
    assert sent.headers["content-type"] == "application/json"
    assert sent.body == {
        "model": "gpt-test",
        "temperature": 0.2,
        "max_tokens": 512,
        "messages": [
            {"role": "system", "content": "L1 documentation\n\nL2 always-send data"},
            {"role": "user", "content": "Question\n\nDATA_ADDED: enrichments"},
            {"role": "assistant", "content": "réponse"},
            {"role": "user", "content": "DATA_ADDED: queries\n\nAutre"},
        ],
    }


def test_openai_parses_content_and_reports_cached_tokens_apart(server: FakeServer) -> None:
    server.answer(OPENAI_OK)

    response = OpenAIProvider().query(SEED_EXAMPLE, openai_config(server.url))

    assert response == AIResponse(
        success=True, content="Hello from OpenAI", input_tokens=40, output_tokens=7, cache_read_tokens=60
    )
    assert response.tokens_used == 107


def test_openai_optional_fields_are_left_out(server: FakeServer) -> None:
    server.answer({"choices": [{"message": {"content": "ok"}}], "usage": {"prompt_tokens_details": None}})
    config = {"base_url": f"{server.url}/v1/", "model": "local-model", **LOCAL}

    response = OpenAIProvider().query(PromptData("", "", [PromptMessage("USER", "hi")]), config)

    assert response == AIResponse(success=True, content="ok")
    assert server.last.path == "/v1/chat/completions"
    assert "authorization" not in server.last.headers
    assert server.last.body == {"model": "local-model", "messages": [{"role": "user", "content": "hi"}]}


def test_openai_answer_without_content_is_a_provider_error(server: FakeServer) -> None:
    server.answer({"choices": []})

    response = OpenAIProvider().query(SEED_EXAMPLE, openai_config(server.url))

    assert not response.success
    assert not response.network_error
    assert response.error_category == ErrorCategory.INVALID_RESPONSE
    assert "choices[0].message.content" in response.error_detail


# --- Anthropic ----------------------------------------------------------------------------------


def test_anthropic_request_shape_with_three_cache_breakpoints(server: FakeServer) -> None:
    server.answer(ANTHROPIC_OK)

    AnthropicProvider().query(SEED_EXAMPLE, anthropic_config(server.url))

    sent = server.last
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == API_KEY
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.headers["content-type"] == "application/json"
    assert "authorization" not in sent.headers
    assert sent.body == {
        "model": "claude-test",
        "max_tokens": 4096,
        "system": [
            {"type": "text", "text": "L1 documentation", "cache_control": EPHEMERAL},
            {"type": "text", "text": "L2 always-send data", "cache_control": EPHEMERAL},
        ],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Question"},
                    {"type": "text", "text": "DATA_ADDED: enrichments"},
                ],
            },
            {"role": "assistant", "content": "réponse"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "DATA_ADDED: queries"},
                    {"type": "text", "text": "Autre", "cache_control": EPHEMERAL},
                ],
            },
        ],
    }
    assert count_cache_controls(sent.body) == 3


def test_anthropic_prepends_a_user_turn_and_keeps_alternation(server: FakeServer) -> None:
    server.answer(ANTHROPIC_OK)
    prompt = PromptData(
        "L1",
        "L2",
        [
            PromptMessage("AI", "first answer"),
            PromptMessage("AI", "second answer"),
            PromptMessage("SYSTEM", "ACTIONS_EXECUTED: done"),
        ],
    )

    AnthropicProvider().query(prompt, anthropic_config(server.url, max_tokens=1000, temperature=0))

    body = server.last.body
    assert body["max_tokens"] == 1000
    assert body["temperature"] == 0
    assert body["messages"] == [
        {"role": "user", "content": "(conversation start)"},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "first answer"}, {"type": "text", "text": "second answer"}],
        },
        {
            "role": "user",
            "content": [{"type": "text", "text": "ACTIONS_EXECUTED: done", "cache_control": EPHEMERAL}],
        },
    ]
    roles = [message["role"] for message in body["messages"]]
    assert roles == ["user", "assistant", "user"]
    assert count_cache_controls(body) == 3


def test_anthropic_empty_history_and_empty_levels_still_carry_three_breakpoints(server: FakeServer) -> None:
    server.answer(ANTHROPIC_OK)

    AnthropicProvider().query(PromptData("", "", []), anthropic_config(server.url))

    body = server.last.body
    assert [block["text"] for block in body["system"]] == ["(empty)", "(empty)"]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "(conversation start)", "cache_control": EPHEMERAL}]}
    ]
    assert count_cache_controls(body) == 3


def test_anthropic_parses_joined_text_and_all_token_counts(server: FakeServer) -> None:
    server.answer(ANTHROPIC_OK)

    response = AnthropicProvider().query(SEED_EXAMPLE, anthropic_config(server.url))

    assert response == AIResponse(
        success=True,
        content="Hello from Claude",
        input_tokens=12,
        output_tokens=5,
        cache_write_tokens=300,
        cache_read_tokens=900,
    )
    assert response.tokens_used == 1217


@pytest.mark.parametrize("missing", ["model", "api_key"])
def test_anthropic_requires_model_and_key(server: FakeServer, missing: str) -> None:
    config = anthropic_config(server.url)
    del config[missing]

    response = AnthropicProvider().query(SEED_EXAMPLE, config)

    assert not response.success
    assert not response.network_error
    assert response.error_category == ErrorCategory.CONFIGURATION
    assert missing in response.error_detail
    assert server.requests == []


# --- Ollama -------------------------------------------------------------------------------------


def test_ollama_request_shape_and_parsing(server: FakeServer) -> None:
    server.answer(OLLAMA_OK)

    response = OllamaProvider().query(SEED_EXAMPLE, ollama_config(server.url, temperature=0.5, max_tokens=256))

    sent = server.last
    assert sent.path == "/api/chat"
    assert "authorization" not in sent.headers  # no key configured, none sent
    assert sent.body == {
        "model": "llama3",
        "stream": False,
        "options": {"temperature": 0.5, "num_predict": 256},
        "messages": [
            {"role": "system", "content": "L1 documentation\n\nL2 always-send data"},
            {"role": "user", "content": "Question\n\nDATA_ADDED: enrichments"},
            {"role": "assistant", "content": "réponse"},
            {"role": "user", "content": "DATA_ADDED: queries\n\nAutre"},
        ],
    }
    assert response == AIResponse(
        success=True, content="Hello from Ollama", input_tokens=42, output_tokens=9, model="llama3"
    )


def test_ollama_without_options_sends_none(server: FakeServer) -> None:
    server.answer(OLLAMA_OK)

    OllamaProvider().query(SEED_EXAMPLE, ollama_config(server.url))

    assert "options" not in server.last.body


# --- Error classification (all network providers) -----------------------------------------------


@pytest.mark.parametrize(
    ("status", "network_error"),
    [(500, True), (502, True), (503, True), (429, True), (408, True), (401, False), (400, False), (404, False)],
)
def test_http_status_classification(
    server: FakeServer, network_provider: Any, status: int, network_error: bool, caplog: pytest.LogCaptureFixture
) -> None:
    provider, make_config, _ = network_provider
    # Providers sometimes echo the key back; it must still never show up in our messages or logs.
    server.answer({"error": {"type": "bad", "message": f"rejected key {API_KEY}"}}, status=status)

    with caplog.at_level(logging.WARNING):
        response = provider.query(SEED_EXAMPLE, make_config(server.url))

    assert not response.success
    assert response.network_error is network_error
    assert (response.error_category, response.status_code) == (ErrorCategory.HTTP_STATUS, status)
    assert response.public_summary == f"AI provider error: http_status (HTTP {status})"
    assert f"HTTP {status}" in response.error_detail
    assert "rejected key [redacted]" in response.error_detail
    assert API_KEY not in response.error_detail
    assert "rejected key [redacted]" in caplog.text  # the detail is in the server log, scrubbed
    assert API_KEY not in caplog.text


def test_ollama_style_error_body_is_reported(server: FakeServer) -> None:
    server.answer({"error": "model 'nope' not found"}, status=404)

    response = OllamaProvider().query(SEED_EXAMPLE, ollama_config(server.url))

    assert not response.network_error
    assert "model 'nope' not found" in response.error_detail
    assert "nope" not in response.public_summary


def test_nothing_listening_is_a_network_error(network_provider: Any, closed_port: int) -> None:
    provider, make_config, _ = network_provider

    response = provider.query(SEED_EXAMPLE, make_config(f"http://127.0.0.1:{closed_port}"))

    assert not response.success
    assert response.network_error
    assert response.error_category == ErrorCategory.NETWORK
    assert API_KEY not in response.error_detail


def test_slow_server_times_out_as_a_network_error(server: FakeServer, network_provider: Any) -> None:
    provider, make_config, ok = network_provider
    server.answer(ok, delay=1.5)

    started = time.monotonic()
    response = provider.query(SEED_EXAMPLE, make_config(server.url, timeout=0.2))

    assert time.monotonic() - started < 1.2
    assert not response.success
    assert response.network_error
    assert response.error_category == ErrorCategory.TIMEOUT
    assert len(server.requests) == 1


def test_default_timeout_is_two_minutes() -> None:
    assert HTTP_TIMEOUT_SECONDS == 120


@pytest.mark.parametrize("body", [b"<html>not json</html>", b"[1, 2, 3]"])
def test_a_body_that_is_not_a_json_object_is_a_provider_error(
    server: FakeServer, network_provider: Any, body: bytes
) -> None:
    provider, make_config, _ = network_provider
    server.answer(body)

    response = provider.query(SEED_EXAMPLE, make_config(server.url))

    assert not response.success
    assert not response.network_error
    assert response.error_category == ErrorCategory.INVALID_RESPONSE


@pytest.mark.parametrize(
    ("config_change", "category"),
    [
        ({"base_url": "nope://host"}, ErrorCategory.REFUSED_ADDRESS),
        ({"base_url": "http://user:pw@127.0.0.1:9"}, ErrorCategory.CONFIGURATION),
        ({"timeout": "soon"}, ErrorCategory.CONFIGURATION),
        ({"timeout": 0}, ErrorCategory.CONFIGURATION),
    ],
)
def test_bad_config_is_a_provider_error(
    network_provider: Any, config_change: dict[str, Any], category: ErrorCategory
) -> None:
    provider, make_config, _ = network_provider
    config = {**make_config("http://127.0.0.1:9"), **config_change}

    response = provider.query(SEED_EXAMPLE, config)

    assert not response.success
    assert not response.network_error
    assert response.error_category == category
    assert API_KEY not in response.error_detail


def test_a_loopback_server_is_refused_unless_the_profile_is_internal(server: FakeServer, network_provider: Any) -> None:
    provider, make_config, ok = network_provider
    server.answer(ok)
    config = {**make_config(server.url), "internal": False}

    response = provider.query(SEED_EXAMPLE, config)

    assert not response.success
    assert not response.network_error
    assert response.error_category == ErrorCategory.REFUSED_ADDRESS
    assert server.requests == []  # the key never left: nothing was sent


def test_a_redirect_is_not_followed(server: FakeServer, network_provider: Any) -> None:
    provider, make_config, ok = network_provider
    elsewhere = FakeServer(url="")
    with serving(_handler_for(elsewhere)) as elsewhere.url:
        elsewhere.answer(ok)
        server.answer({"error": "moved"}, status=307, headers={"location": f"{elsewhere.url}/steal"})

        response = provider.query(SEED_EXAMPLE, make_config(server.url))

    assert (response.error_category, response.status_code) == (ErrorCategory.HTTP_STATUS, 307)
    assert not response.network_error
    assert len(server.requests) == 1
    assert elsewhere.requests == []


def test_the_connection_goes_to_the_address_that_was_checked(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DNS rebinding: the name answers the local server once, then an address nobody listens on.
    The call still reaches the server, because it connects to the checked address and keeps the
    name for the Host header."""
    port = int(server.url.rsplit(":", 1)[1])
    real = socket.getaddrinfo
    answers = iter(["127.0.0.1", "192.0.2.1", "192.0.2.1"])

    def rebinding(host: str, *args: Any, **kwargs: Any) -> Any:
        if host == "model.rebind.test":
            return real(next(answers), *args, **kwargs)
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    server.answer(OLLAMA_OK)

    response = OllamaProvider().query(SEED_EXAMPLE, ollama_config(f"http://model.rebind.test:{port}", timeout=3))

    assert response.success, response.error_detail
    assert server.last.headers["host"] == f"model.rebind.test:{port}"
    assert next(answers) == "192.0.2.1"  # resolved exactly once


def test_missing_model_is_a_provider_error(server: FakeServer, network_provider: Any) -> None:
    provider, make_config, _ = network_provider
    config = make_config(server.url)
    del config["model"]

    response = provider.query(SEED_EXAMPLE, config)

    assert not response.success
    assert not response.network_error
    assert "model" in response.error_detail
    assert server.requests == []


# --- Scripted -----------------------------------------------------------------------------------


def history(*senders: str) -> PromptData:
    """A prompt whose session holds one message per sender given, in order."""
    return PromptData("doc words", "data", [PromptMessage(sender, f"{sender} text") for sender in senders])


SCRIPT = {"responses": ["first", "second", "third"]}


@pytest.mark.parametrize(
    ("senders", "expected"),
    [
        ((), "first"),
        (("USER",), "first"),
        (("USER", "AI", "SYSTEM"), "second"),
        (("USER", "AI", "SYSTEM", "AI", "USER"), "third"),
    ],
)
def test_scripted_answers_by_number_of_ai_messages(senders: tuple[str, ...], expected: str) -> None:
    response = ScriptedProvider().query(history(*senders), SCRIPT)

    assert response.success
    assert response.content == expected


def test_scripted_resumed_session_continues_where_it_was() -> None:
    provider = ScriptedProvider()
    before = history("USER", "AI", "USER")

    # A fresh provider instance (e.g. after a restart) gives the same next answer: no hidden state.
    assert provider.query(before, SCRIPT).content == "second"
    assert ScriptedProvider().query(before, SCRIPT).content == "second"


def test_scripted_exhausted_script_is_a_provider_error() -> None:
    response = ScriptedProvider().query(history("USER", "AI", "AI", "AI", "USER"), SCRIPT)

    assert response == AIResponse(
        success=False, error_category=ErrorCategory.CONFIGURATION, error_detail="script exhausted", network_error=False
    )


def test_scripted_repeat_last() -> None:
    config = {**SCRIPT, "repeat_last": True}

    response = ScriptedProvider().query(history("AI", "AI", "AI", "AI", "AI"), config)

    assert response.success
    assert response.content == "third"


def test_scripted_empty_script_is_exhausted_even_with_repeat_last() -> None:
    response = ScriptedProvider().query(history("USER"), {"responses": [], "repeat_last": True})

    assert response.error_detail == "script exhausted"


def test_scripted_network_errors_at_fails_every_attempt() -> None:
    config = {**SCRIPT, "network_errors_at": [1]}
    provider = ScriptedProvider()

    assert provider.query(history("USER"), config).content == "first"
    failed = provider.query(history("USER", "AI", "USER"), config)
    retried = provider.query(history("USER", "AI", "USER", "SYSTEM"), config)

    assert (failed.success, failed.network_error) == (False, True)
    assert (retried.success, retried.network_error) == (False, True)


def test_scripted_token_counts_are_deterministic_word_counts() -> None:
    response = ScriptedProvider().query(history("USER"), {"responses": ["two words"]})

    # "doc words" + "data" + "USER text" = 5 prompt words.
    assert (response.input_tokens, response.output_tokens) == (5, 2)


def test_scripted_rejects_a_malformed_script() -> None:
    response = ScriptedProvider().query(history(), {"responses": "not a list"})

    assert not response.success
    assert not response.network_error


# --- Registry -----------------------------------------------------------------------------------


def test_registry_knows_the_four_providers() -> None:
    assert PROVIDER_NAMES == ("openai", "anthropic", "ollama", "scripted")
    for name in PROVIDER_NAMES:
        provider = get_provider(name)
        assert provider.name == name
        assert callable(provider.query)


def test_registry_unknown_name_raises_a_clear_key_error() -> None:
    with pytest.raises(KeyError, match=r"unknown AI provider 'gemini'.*openai, anthropic, ollama, scripted"):
        get_provider("gemini")
