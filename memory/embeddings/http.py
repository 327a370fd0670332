"""The one HTTP call the server backends (ollama, openai) make: a JSON POST, stdlib only.

The backends are pure modules and a JSON POST needs nothing more than urllib, with redirects refused (urllib
would replay a POST as a GET and carry the Authorization header elsewhere) and only http(s) base URLs
accepted. Every failure becomes an `EmbeddingError` whose message names the URL without credentials and
never contains the API key, even when a server echoes it back.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from http.client import HTTPException
from typing import Any

from memory.embeddings.base import EmbeddingBackend, EmbeddingError

DEFAULT_TIMEOUT_SECONDS = 30.0  # seed 004: "timeout 30000 ms"
# Longest server reply body quoted in an error: enough to see the server's reason, not a whole page.
_ERROR_BODY_CHARS = 200


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuse redirects: urllib would replay a POST as a GET and carry the Authorization header elsewhere."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def _clean_base_url(url: str) -> str:
    """Validate a base URL and drop trailing slashes; only http(s) is accepted (no file:// surprises)."""
    url = str(url).strip()
    if "://" not in url:  # OLLAMA_HOST is often "host:port"
        url = f"http://{url}"
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"embedding URL must be http(s)://host[:port][/path], got {_safe_url(url)!r}")
    return url.rstrip("/")


def _safe_url(url: str) -> str:
    """The URL without user:password@ and query string, for error messages."""
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        netloc = f"{host}:{parts.port}" if parts.port else host
        return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    except ValueError:
        return "<invalid url>"


def _redact(text: str, secret: str | None) -> str:
    """Remove a secret from a message, in case a server echoes it back (some echo the bad header)."""
    if secret:
        text = text.replace(secret, "***")
    return text


def _post_json(
    backend: EmbeddingBackend,
    url: str,
    payload: dict[str, Any],
    *,
    timeout: float,
    api_key: str | None = None,
) -> Any:
    """POST JSON and return the decoded JSON body; every failure becomes an `EmbeddingError`.

    The timeout applies to connecting and to each socket read (urllib's semantics), so a server that sleeps
    longer than ``timeout`` before answering fails with an `EmbeddingError` after about ``timeout`` seconds.
    Errors are raised ``from None``: a chained urllib exception would carry the request, whose headers hold the
    key, into tracebacks and error reporters.
    """
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    request = urllib.request.Request(url, data=json.dumps(payload).encode("utf-8"), headers=headers, method="POST")
    if api_key:
        # Unredirected: never forwarded by urllib to another URL (redirects are refused anyway).
        request.add_unredirected_header("Authorization", f"Bearer {api_key}")
    where = f"{backend.name} embedding request to {_safe_url(url)}"
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            raw = response.read()
    except urllib.error.HTTPError as exc:
        try:
            body = exc.read(_ERROR_BODY_CHARS * 4).decode("utf-8", "replace")[:_ERROR_BODY_CHARS]
        except (OSError, HTTPException):
            body = ""
        finally:
            exc.close()
        detail = f"{where} failed: HTTP {exc.code} {exc.reason}" + (f": {body.strip()}" if body.strip() else "")
        raise EmbeddingError(_redact(detail, api_key)) from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        kind = "timed out" if isinstance(reason, TimeoutError) else "could not connect"
        raise EmbeddingError(_redact(f"{where} {kind}: {reason}", api_key)) from None
    except TimeoutError:
        raise EmbeddingError(f"{where} timed out after {timeout:g} s") from None
    except (OSError, HTTPException) as exc:
        raise EmbeddingError(_redact(f"{where} failed: {type(exc).__name__}: {exc}", api_key)) from None
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise EmbeddingError(f"{where} answered a body that is not JSON") from None
