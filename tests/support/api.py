"""A test client for the REST API that sends one bearer key, so tests read as calls, not headers."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.test import Client


@dataclass
class Api:
    """A test client speaking to /api/v1 with one bearer key (none: an anonymous caller)."""

    client: Client
    key: str | None = None

    def _headers(self, extra: dict[str, Any] | None) -> dict[str, Any]:
        headers = {"HTTP_AUTHORIZATION": f"Bearer {self.key}"} if self.key else {}
        headers.update(extra or {})
        return headers

    # The responses are typed Any: tests read .json(), .content and headers, which no one stub type has.
    def get(self, path: str, params: dict[str, Any] | None = None, **extra: Any) -> Any:
        return self.client.get(f"/api/v1{path}", params or {}, **self._headers(extra))

    def delete(self, path: str, **extra: Any) -> Any:
        return self.client.delete(f"/api/v1{path}", **self._headers(extra))

    def send(self, method: str, path: str, body: Any = None, *, raw: bytes | str | None = None, **extra: Any) -> Any:
        """``raw`` goes out as it is (malformed JSON, another content type); ``body`` as JSON."""
        data = raw if raw is not None else json.dumps(body)
        content_type = extra.pop("content_type", "application/json")
        call = getattr(self.client, method)
        return call(f"/api/v1{path}", data=data, content_type=content_type, **self._headers(extra))

    def post(self, path: str, body: Any = None, **extra: Any) -> Any:
        return self.send("post", path, body, **extra)

    def put(self, path: str, body: Any = None, **extra: Any) -> Any:
        return self.send("put", path, body, **extra)
