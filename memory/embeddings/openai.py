"""``openai``: any OpenAI-compatible ``POST {url}/v1/embeddings`` (vLLM, llama.cpp server, LM Studio, ...)."""

from __future__ import annotations

from typing import Any

from memory.embeddings.base import EmbeddingError, _check_texts, _check_vectors, _positive_float, _positive_int
from memory.embeddings.http import DEFAULT_TIMEOUT_SECONDS, _clean_base_url, _post_json, _safe_url


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
