"""The one HTTP call every network provider makes, and reading numbers out of its answer.

Stdlib only (urllib): the providers are pure modules and a JSON POST needs nothing more.
``post_json`` never raises for a failed call. It returns the decoded JSON object, or an
``AIResponse(success=False)`` whose ``network_error`` decides what the processor does next:

* True  - transient, worth retrying (AUTOMATION waits and retries): nothing listening, DNS
  failure, timeout, dropped connection, HTTP 5xx, 408 and 429.
* False - the provider refused or answered nonsense (bad key, unknown model, malformed request,
  a body that is not a JSON object): retrying would fail the same way, so the session ends.

Secrets (API keys) are scrubbed from every message this module builds or logs, even when the
provider echoes them back in an error body.
"""

from __future__ import annotations

import http.client
import json
import logging
import urllib.error
import urllib.request
from collections.abc import Iterable
from typing import Any

from sessions.providers.base import HTTP_TIMEOUT_SECONDS, AIResponse

logger = logging.getLogger(__name__)

TRANSIENT_STATUSES = frozenset({408, 429})
MAX_DETAIL_CHARS = 500
REDACTED = "[redacted]"


def post_json(
    url: str,
    payload: dict[str, Any],
    headers: dict[str, str],
    config: dict[str, Any],
    secrets: Iterable[str | None] = (),
) -> dict[str, Any] | AIResponse:
    """POST ``payload`` as JSON to ``url``; the decoded JSON object or a failed AIResponse.

    The timeout is two minutes (seed section 8) unless ``config["timeout"]`` (seconds) says otherwise.
    """
    hidden = [secret for secret in secrets if secret]
    try:
        timeout = _timeout(config)
        request = urllib.request.Request(
            url,
            data=json.dumps(payload).encode("utf-8"),
            headers={"content-type": "application/json", "accept": "application/json", **headers},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
    except urllib.error.HTTPError as error:
        return _failure(_http_error_message(url, error), error.code >= 500 or error.code in TRANSIENT_STATUSES, hidden)
    except urllib.error.URLError as error:
        # OSError reasons (refused, DNS, timeout, TLS) are the network; others ("unknown url type") are config.
        return _failure(f"cannot reach {url}: {error.reason}", isinstance(error.reason, OSError), hidden)
    except (TimeoutError, ConnectionError, http.client.HTTPException) as error:
        return _failure(f"connection to {url} failed: {_describe(error)}", True, hidden)
    except ValueError as error:  # malformed URL or timeout, refused before any I/O
        return _failure(f"invalid request to {url}: {error}", False, hidden)
    except OSError as error:
        return _failure(f"connection to {url} failed: {_describe(error)}", True, hidden)
    return _decode(url, body, hidden)


def dig(data: Any, *path: str | int) -> Any:
    """``data[p0][p1]...`` or None as soon as a step is missing: provider answers omit fields freely."""
    for step in path:
        if isinstance(step, int) and isinstance(data, list) and -len(data) <= step < len(data):
            data = data[step]
        elif isinstance(step, str) and isinstance(data, dict):
            data = data.get(step)
        else:
            return None
    return data


def count(data: Any, *path: str | int) -> int:
    """A token count at ``path``; 0 when absent or null (e.g. ``prompt_tokens_details: null``)."""
    value = dig(data, *path)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def provider_error(message: str) -> AIResponse:
    """A refusal that retrying will not fix: bad config or an answer of unexpected shape."""
    return AIResponse(success=False, error_message=message, network_error=False)


def _timeout(config: dict[str, Any]) -> float:
    value = config.get("timeout", HTTP_TIMEOUT_SECONDS)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"config 'timeout' must be a positive number of seconds, got {value!r}")
    return float(value)


def _decode(url: str, body: bytes, hidden: list[str]) -> dict[str, Any] | AIResponse:
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return _failure(f"invalid JSON from {url}: {_snippet(body)}", False, hidden)
    if not isinstance(data, dict):
        return _failure(f"expected a JSON object from {url}, got {type(data).__name__}", False, hidden)
    return data


def _http_error_message(url: str, error: urllib.error.HTTPError) -> str:
    try:
        body = error.read()
    except (OSError, http.client.HTTPException):
        body = b""
    return f"HTTP {error.code} from {url}: {_error_detail(body) or error.reason}"


def _error_detail(body: bytes) -> str:
    """The provider's own explanation: OpenAI/Anthropic ``error.message``, Ollama ``error``, else raw text."""
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return _snippet(body)
    for path in (("error", "message"), ("error",), ("message",), ("detail",)):
        found = dig(data, *path)
        if isinstance(found, str) and found:
            return found[:MAX_DETAIL_CHARS]
    return _snippet(body)


def _snippet(body: bytes) -> str:
    return body.decode("utf-8", errors="replace").strip()[:MAX_DETAIL_CHARS]


def _describe(error: BaseException) -> str:
    return str(error) or type(error).__name__


def _failure(message: str, network_error: bool, hidden: list[str]) -> AIResponse:
    for secret in hidden:
        message = message.replace(secret, REDACTED)
    logger.warning("AI provider call failed (network_error=%s): %s", network_error, message)
    return AIResponse(success=False, error_message=message, network_error=network_error)
