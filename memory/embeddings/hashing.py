"""``hashing``: deterministic token hashing, for tests only (`get_backend` refuses it outside tests)."""

from __future__ import annotations

import hashlib
import math
import re

from memory.embeddings.base import _check_texts, _check_vectors, _positive_int
from memory.embeddings.local import LOCAL_DIMENSION

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
