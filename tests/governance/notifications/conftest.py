"""Fixtures of the notification tests: receivers over a real socket on 127.0.0.1, reached by rules
marked internal (the outbound guard refuses loopback to any other)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from tests.support.http_servers import answering_posts, serving


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    signature_ok: bool | None

    @property
    def json(self) -> dict:
        return json.loads(self.body)


@dataclass
class Receiver:
    """Answers each POST with the next status of ``statuses`` (the last one repeats) and checks a
    signed webhook's signature with ``secret`` through the official Standard Webhooks library, as
    a receiver written from the README would."""

    url: str = ""
    statuses: list[int] = field(default_factory=lambda: [200])
    secret: str | None = None
    got: list[Received] = field(default_factory=list)

    def verify(self, headers: dict[str, str], body: bytes) -> bool | None:
        if self.secret is None or "webhook-signature" not in headers:
            return None
        try:
            Webhook(self.secret).verify(body, headers)
        except WebhookVerificationError:
            return False
        return True


@contextmanager
def receiving() -> Iterator[Receiver]:
    state = Receiver()

    def answer(path: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
        state.got.append(Received(path, headers, body, state.verify(headers, body)))
        status = state.statuses.pop(0) if len(state.statuses) > 1 else state.statuses[0]
        return status, (b"refused: " + b"x" * 5000 if status >= 400 else b"ok")

    with serving(answering_posts(answer)) as url:
        state.url = url + "/hook"
        yield state


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with receiving() as state:
        yield state


@pytest.fixture
def other_receiver() -> Iterator[Receiver]:
    with receiving() as state:
        yield state
