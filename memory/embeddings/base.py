"""What every embedding backend is and must guarantee: the `EmbeddingBackend` protocol, its errors and the
checks each backend runs on what goes in and comes out. Pure: no Django, no network.

Every vector a backend returns is checked against the backend's declared dimension: a mismatch raises
`DimensionMismatch` (seed 004 TC-NEG-05: a wrong-sized vector must never reach an index). Unreachable or
misbehaving servers raise `EmbeddingError`, whose message never contains the API key, so callers can log it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable


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
