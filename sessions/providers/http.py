"""The one HTTP call every network provider makes, and reading numbers out of its answer.

Stdlib only (http.client through the outbound guard): the providers are pure modules and a JSON
POST needs nothing more. urllib is deliberately not used: it opens ``file:`` URLs and follows
redirects to places nobody checked. ``post_json`` never raises for a failed call. It returns the
decoded JSON object, or an ``AIResponse(success=False)`` whose ``network_error`` decides what the
processor does next:

* True  - transient, worth retrying (AUTOMATION waits and retries): nothing listening, DNS
  failure, timeout, dropped connection, HTTP 5xx, 408 and 429. Its ``retry_after`` carries the
  provider's Retry-After, when it sent one, so the session waits at least that long.
* False - the provider refused or answered nonsense (bad key, unknown model, malformed request,
  a redirect, a body that is not a JSON object), or the guard refused the destination: retrying
  would fail the same way, so the session ends.

Every failure carries an ``error_category`` and, for an HTTP answer, its ``status_code``: that is
all an agent ever sees. The provider's own words go to ``error_detail`` and the server log, with
secrets (API keys) scrubbed even when the provider echoes them back.

``config["internal"]`` (set from the operator's profile, never from options) lets the guard
accept plain http and private or loopback addresses, for a model server on the local network.
"""

from __future__ import annotations

import http.client
import json
import logging
import math
from collections.abc import Iterable
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from sessions.providers import outbound
from sessions.providers.base import HTTP_TIMEOUT_SECONDS, AIResponse, ErrorCategory

logger = logging.getLogger(__name__)

TRANSIENT_STATUSES = frozenset({408, 429})
MAX_DETAIL_CHARS = 500
MAX_BODY_BYTES = 16 * 1024 * 1024  # a chat answer is far smaller; a runaway body is not read whole
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
    The destination is checked (scheme, every resolved address) right before connecting, and the
    connection goes to the checked address.
    """
    hidden = [secret for secret in secrets if secret]
    try:
        timeout = _timeout(config)
    except ValueError as error:
        return _failure(ErrorCategory.CONFIGURATION, f"invalid request to {url}: {error}", False, hidden)
    try:
        target = outbound.check(url, internal=config.get("internal") is True)
    except outbound.OutboundRefused as error:
        return _failure(ErrorCategory(error.category), f"{url} refused: {error}", False, hidden)
    except (OSError, UnicodeError) as error:  # socket.gaierror: no such name, resolver down
        return _failure(ErrorCategory.NETWORK, f"cannot resolve {url}: {_describe(error)}", True, hidden)
    body = json.dumps(payload).encode("utf-8")
    request_headers = {"content-type": "application/json", "accept": "application/json", **headers}
    connection = outbound.connection(target, timeout)
    try:
        connection.request("POST", target.path, body=body, headers=request_headers)
        response = connection.getresponse()
        status, reason = response.status, response.reason
        data = response.read(MAX_BODY_BYTES)
        location = response.getheader("location")
        retry_after = retry_after_seconds(response.getheader("retry-after"))
    except TimeoutError as error:
        return _failure(ErrorCategory.TIMEOUT, f"{url} timed out after {timeout:g} s: {_describe(error)}", True, hidden)
    except (OSError, http.client.HTTPException) as error:
        return _failure(ErrorCategory.NETWORK, f"connection to {url} failed: {_describe(error)}", True, hidden)
    finally:
        connection.close()
    if 300 <= status < 400:
        detail = f"HTTP {status} from {url}: redirect to {location!r} not followed"
        return _failure(ErrorCategory.HTTP_STATUS, detail, False, hidden, status)
    if not 200 <= status < 300:
        detail = f"HTTP {status} from {url}: {_error_detail(data, hidden) or reason}"
        transient = status >= 500 or status in TRANSIENT_STATUSES
        return _failure(
            ErrorCategory.HTTP_STATUS, detail, transient, hidden, status, retry_after if transient else None
        )
    return _decode(url, data, hidden)


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


def text(data: Any, *path: str | int) -> str:
    """A string found at ``path``, "" when absent or not a string (a provider's optional fields)."""
    value = dig(data, *path)
    return value[:200] if isinstance(value, str) else ""


def provider_error(message: str, category: ErrorCategory) -> AIResponse:
    """A refusal that retrying will not fix: bad config or an answer of unexpected shape."""
    logger.warning("AI provider call failed (%s): %s", category.value, message)
    return AIResponse(success=False, error_category=category, error_detail=message, network_error=False)


def _timeout(config: dict[str, Any]) -> float:
    value = config.get("timeout", HTTP_TIMEOUT_SECONDS)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"config 'timeout' must be a positive number of seconds, got {value!r}")
    return float(value)


def _decode(url: str, body: bytes, hidden: list[str]) -> dict[str, Any] | AIResponse:
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return _failure(
            ErrorCategory.INVALID_RESPONSE, f"invalid JSON from {url}: {_snippet(body, hidden)}", False, hidden
        )
    if not isinstance(data, dict):
        detail = f"expected a JSON object from {url}, got {type(data).__name__}"
        return _failure(ErrorCategory.INVALID_RESPONSE, detail, False, hidden)
    return data


def _error_detail(body: bytes, hidden: list[str]) -> str:
    """The provider's own explanation: OpenAI/Anthropic ``error.message``, Ollama ``error``, else raw
    text. Scrubbed before it is cut short, so no fragment of a secret survives the cut."""
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return _snippet(body, hidden)
    for path in (("error", "message"), ("error",), ("message",), ("detail",)):
        found = dig(data, *path)
        if isinstance(found, str) and found:
            return scrub(found, hidden)[:MAX_DETAIL_CHARS]
    return _snippet(body, hidden)


def _snippet(body: bytes, hidden: list[str]) -> str:
    return scrub(body.decode("utf-8", errors="replace"), hidden).strip()[:MAX_DETAIL_CHARS]


def _describe(error: BaseException) -> str:
    return str(error) or type(error).__name__


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` without any of ``secrets``, as written or as JSON would escape them."""
    for secret in secrets:
        for form in {secret, json.dumps(secret)[1:-1]}:
            text = text.replace(form, REDACTED)
    return text


def retry_after_seconds(value: str | None, *, now: datetime | None = None) -> int | None:
    """An HTTP Retry-After header (RFC 9110: whole seconds, or an HTTP date) as whole seconds from
    now; None when absent or unreadable, 0 for a date already past."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return int(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0, math.ceil((when - (now or datetime.now(UTC))).total_seconds()))


def _failure(
    category: ErrorCategory,
    message: str,
    network_error: bool,
    hidden: list[str],
    status: int | None = None,
    retry_after: int | None = None,
) -> AIResponse:
    detail = scrub(message, hidden)
    logger.warning("AI provider call failed (%s, network_error=%s): %s", category.value, network_error, detail)
    return AIResponse(
        success=False,
        error_category=category,
        status_code=status,
        error_detail=detail,
        network_error=network_error,
        retry_after=retry_after,
    )
