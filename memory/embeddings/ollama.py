"""``ollama``: ``POST {url}/api/embeddings`` per text, nomic-embed-text / 768-d / 30 s by default, as seed 004.

The URL defaults to ``$OLLAMA_HOST``, else ``http://localhost:11434`` (seed 004 H-08).
"""

from __future__ import annotations

import os
from typing import Any

from memory.embeddings.base import EmbeddingError, _check_texts, _check_vectors, _positive_float, _positive_int
from memory.embeddings.http import DEFAULT_TIMEOUT_SECONDS, _clean_base_url, _post_json, _safe_url

OLLAMA_DEFAULT_URL = "http://localhost:11434"  # seed 004 H-08
OLLAMA_DEFAULT_MODEL = "nomic-embed-text"
OLLAMA_DEFAULT_DIMENSION = 768  # seed 004: "Dimension attendue 768, sinon raise ValueError"


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
