"""Hosted automations against a fake model: a real OpenAI-style HTTP server on 127.0.0.1 (what lies
outside the product), an internal provider profile aimed at it, and a seed agent whose manifest
lists that profile. Every call goes through the real outbound guard, http.client and processor."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from agents.manifest import read_text
from agents.registry import load_manifest
from governance.kernel.principals import SYSTEM
from sessions import profiles
from sessions.models import AISession, ProviderProfile
from tests.support.api import Api
from tests.support.http_servers import serving
from tests.support.manifests import manifest_text

PROFILE = "local-llm"


def openai_answer(content: str, *, output_tokens: int = 7) -> dict[str, Any]:
    return {
        "choices": [{"message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 11, "completion_tokens": output_tokens},
    }


@dataclass
class ModelServer:
    """What the fake provider received, and how it answers: ``status`` with ``body`` and
    ``headers``, after ``delay`` seconds. A body of None echoes the Authorization header back, as
    careless providers (and proxies) do."""

    url: str = ""
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    received: list[dict[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    state = ModelServer()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", 0)))
            headers = {key.lower(): value for key, value in self.headers.items()}
            with state.lock:
                state.received.append(headers)
            time.sleep(state.delay)
            body = state.body
            if body is None:
                body = {"error": {"message": f"invalid credentials: {headers.get('authorization')}"}}
            reply = json.dumps(body).encode()
            self.send_response(state.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(reply)))
            for name, value in state.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with serving(Handler) as state.url:
        yield state


def allow_profiles(agent_id: str, *names: str) -> None:
    """A new manifest version of the seed agent that lists ``names`` in provider_profiles."""
    document = read_text(manifest_text(agent_id))
    document.update(version="1.5.0", provider_profiles=list(names))
    load_manifest(document, actor=SYSTEM)


def local_profile(url: str, *, secret_name: str = "", **options: Any) -> ProviderProfile:
    return profiles.create_profile(
        actor=SYSTEM,
        name=PROFILE,
        provider="openai",
        model="gpt-test",
        base_url=f"{url}/v1",
        secret_name=secret_name,
        internal=True,
        options=options,
    )


def hosted_run(agent_api: Api, profile: str = PROFILE) -> str:
    """The agent creates a MANUAL automation on ``profile`` and runs it: the session is left in
    CALLING_AI, the server's turn to call the model."""
    created = agent_api.post(
        "/automations",
        {"name": "nightly", "trigger": "MANUAL", "messages": [{"text": "audit"}], "providerProfile": profile},
    )
    assert created.status_code == 201, created.content
    assert created.json()["provider"] == "openai"
    started = agent_api.post(f"/automations/{created.json()['id']}/execute")
    assert started.status_code == 202, started.content
    session_id = started.json()["sessionId"]
    assert AISession.objects.get(pk=session_id).phase == "CALLING_AI"
    return session_id
