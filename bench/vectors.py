"""Data for ``python -m bench memory``: learning texts, their vectors, exact neighbours, recall,
and the PostgreSQL binary COPY rows of ``memory_embedding``. A helper module, not a benchmark.

No Django here (numpy and the stdlib only; the real MiniLM embedding is asked of the caller's
backend), so the data can be generated, checked and cached before the database is touched.

Why the vectors look the way they do:

* **A few thousand real MiniLM vectors** (``all-MiniLM-L6-v2`` through ``memory.embeddings``) of
  generated learning texts, so part of the index is the real distribution and the injection
  block's query embeddings land among real neighbours.
* **Clustered synthetic vectors for the bulk**: embedding a million texts on two CPU cores would
  take hours. Uniform random vectors would make recall meaningless (in 384 dimensions every point
  is almost equally far from every other), so each synthetic vector is a random unit cluster
  centre plus Gaussian noise, mostly along a few directions of its own cluster (real embeddings
  of one topic vary along a few semantic directions) and a little in every direction, then
  normalised. The queries are held-out vectors of the same clusters: they have true near
  neighbours, as a real query about a known topic does.
"""

from __future__ import annotations

import hashlib
import random
import struct
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

DIMENSION = 384

# --- Texts ---------------------------------------------------------------------------------------

DOMAINS = (
    "seo",
    "billing",
    "onboarding",
    "search",
    "payments",
    "analytics",
    "infra",
    "security",
    "mobile",
    "email",
    "catalog",
    "checkout",
    "support",
    "ads",
    "content",
    "auth",
    "data",
    "ml",
    "growth",
    "legal",
)
SUBJECTS = (
    "the sitemap generator",
    "canonical URLs",
    "the crawler",
    "retry logic",
    "the cache layer",
    "pagination",
    "structured data",
    "the robots.txt parser",
    "hreflang tags",
    "image compression",
    "the login flow",
    "webhook handlers",
    "the CSV export",
    "rate limits",
    "the job queue",
    "database migrations",
    "feature flags",
    "the pricing page",
    "A/B test assignment",
    "timezone handling",
    "currency rounding",
    "the search index",
    "the embeddings pipeline",
    "the PDF renderer",
    "email templates",
    "SSO callbacks",
    "mobile deep links",
    "session expiry",
    "the audit log",
    "GDPR deletion requests",
)
PROBLEMS = (
    "returned duplicates",
    "timed out under load",
    "broke on unicode input",
    "silently dropped rows",
    "double-charged customers",
    "leaked stale data",
    "ignored the locale",
    "produced 404s",
    "exceeded the API quota",
    "raced with the nightly batch",
    "failed only in production",
    "hid errors from the gate",
    "was not idempotent",
    "lost precision",
    "blocked the release",
)
FIXES = (
    "add an idempotency key",
    "normalise the input first",
    "batch the writes",
    "pin the version",
    "validate at the boundary",
    "log the request id",
    "use a transaction",
    "add a regression test",
    "cap the page size",
    "invalidate the cache on write",
    "compare in UTC",
    "use decimal arithmetic",
    "retry with backoff",
    "check the gate result before merging",
    "document the assumption in the story",
)


def learning_text(rng: random.Random) -> str:
    """One plausible learning sentence (about 400 000 distinct ones): short, like the seed's."""
    domain, subject = rng.choice(DOMAINS), rng.choice(SUBJECTS)
    problem, fix = rng.choice(PROBLEMS), rng.choice(FIXES)
    form = rng.randrange(3)
    if form == 0:
        return f"In {domain}, {subject} {problem}; {fix}."
    if form == 1:
        return f"When {subject} {problem} ({domain}), {fix} before the gate."
    return f"{domain.capitalize()} lesson: {fix} so that {subject} never again {problem}."


def unique_texts(count: int, seed: int) -> list[str]:
    """``count`` distinct texts: duplicates would give identical vectors and ambiguous neighbours."""
    rng = random.Random(seed)
    seen: dict[str, None] = {}
    while len(seen) < count:
        seen[learning_text(rng)] = None
    return list(seen)


def embed_cached(texts: list[str], model: str, embed: Callable[[list[str]], list[list[float]]]) -> np.ndarray:
    """Real embeddings of ``texts``, cached in the temp directory by a hash of model and texts:
    MiniLM does ~90 short texts/s on two cores, and the texts are the same from run to run."""
    digest = hashlib.sha256("\n".join([model, *texts]).encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"bench-memory-{model}-{len(texts)}-{digest}.npy"
    if path.exists():
        return np.load(path)
    vectors = np.asarray(embed(texts), dtype=np.float32)
    np.save(path, vectors)
    return vectors


# --- Clustered synthetic vectors -----------------------------------------------------------------


@dataclass(frozen=True)
class ClusterSpec:
    """How the synthetic vectors are drawn (documented in the results).

    With the defaults a vector's cosine to its cluster centre is about 0.8: the noise has norm
    ~0.7 along ``rank`` directions of its cluster and ~0.25 spread over all 384 dimensions. That
    gives a local intrinsic dimension of ~11 at 100 000 rows and ~16 at 1 000 000 (our real MiniLM
    rows: ~11 at 3 000), far from isotropic clusters (~100 at 1M: every neighbour equally far,
    which no text corpus looks like). ``rank`` and ``spread`` move it (``--rank``, ``--spread``).
    The random centres are nearly orthogonal, so clusters are islands an HNSW graph must bridge;
    ``domains`` groups them (``--domains``) for corpora whose topics touch.
    """

    clusters: int = 1000
    domains: int = 0  # > 0: centres grouped around that many domain directions (bridged clusters)
    rank: int = 16
    along: float = 0.7  # norm of the noise along the cluster's own directions
    spread: float = 0.25  # norm of the isotropic noise
    seed: int = 4

    def describe(self) -> str:
        centres = f"grouped in {self.domains} domains" if self.domains else "random unit centres"
        return (
            f"{self.clusters} clusters around {centres}; noise of norm {self.along} along "
            f"{self.rank} random directions per cluster plus {self.spread} isotropic; normalised"
        )


def clustered_vectors(count: int, spec: ClusterSpec, seed: int, dim: int = DIMENSION) -> np.ndarray:
    """``count`` unit vectors (float32) of the clusters of ``spec``; ``seed`` picks the draw, so
    rows and held-out queries come from the same clusters but are different vectors."""
    centres, bases = _clusters(spec, dim)
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, spec.clusters, count)
    out = centres[labels]
    out += rng.standard_normal((count, dim), dtype=np.float32) * np.float32(spec.spread / np.sqrt(dim))
    sigma = np.float32(spec.along / np.sqrt(spec.rank))
    for cluster in range(spec.clusters):  # grouped: (count, rank, dim) at once would not fit in memory
        rows = np.flatnonzero(labels == cluster)
        out[rows] += (rng.standard_normal((len(rows), spec.rank), dtype=np.float32) * sigma) @ bases[cluster]
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


def _clusters(spec: ClusterSpec, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Unit centres and, per cluster, ``rank`` random directions of unit norm (not orthogonalised:
    in 384 dimensions random directions are nearly orthogonal already)."""
    rng = np.random.default_rng(spec.seed)
    centres = _unit(rng.standard_normal((spec.clusters, dim), dtype=np.float32))
    if spec.domains:  # cos ~0.36 between clusters of a domain, ~0 across: topics that touch
        domains = _unit(rng.standard_normal((spec.domains, dim), dtype=np.float32))
        centres = _unit(0.6 * domains[np.arange(spec.clusters) % spec.domains] + 0.8 * centres)
    bases = rng.standard_normal((spec.clusters, spec.rank, dim), dtype=np.float32) / np.float32(np.sqrt(dim))
    return centres, bases


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


# --- Exact neighbours and recall -----------------------------------------------------------------


def exact_top_k(vectors: np.ndarray, active: np.ndarray, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Brute-force top-``k`` by inner product (= cosine: all unit vectors) over the active rows:
    (row indexes, similarities), best first. In chunks, so a million rows need ~1 GB, not 2."""
    best_rows = np.empty((len(queries), 0), dtype=np.int64)
    best_sims = np.empty((len(queries), 0), dtype=np.float32)
    chunk = 200_000
    for start in range(0, len(vectors), chunk):
        sims = queries @ vectors[start : start + chunk].T
        sims[:, ~active[start : start + chunk]] = -np.inf
        top = np.argpartition(-sims, min(k, sims.shape[1] - 1), axis=1)[:, :k]
        best_rows = np.hstack([best_rows, top + start])
        best_sims = np.hstack([best_sims, np.take_along_axis(sims, top, axis=1)])
    order = np.argsort(-best_sims, axis=1)[:, :k]
    return np.take_along_axis(best_rows, order, axis=1), np.take_along_axis(best_sims, order, axis=1)


TIE_TOLERANCE = 1e-5  # float32 sums in numpy and in pgvector differ in the last bits


def hits_per_query(
    found: list[list[int]],
    truth_rows: np.ndarray,
    truth_sims: np.ndarray,
    vectors: np.ndarray,
    queries: np.ndarray,
    k: int,
) -> list[int]:
    """How many of the exact top-k each answer holds (rows, 0-based). A row outside the exact
    top-k still counts when its similarity ties the k-th (to ``TIE_TOLERANCE``): either is right."""
    out = []
    for q, rows in enumerate(found):
        exact = set(truth_rows[q].tolist())
        kth = float(truth_sims[q, k - 1])
        hits = sum(1 for row in rows[:k] if row in exact or float(vectors[row] @ queries[q]) >= kth - TIE_TOLERANCE)
        out.append(min(hits, k))
    return out


def recall_at_k(hits: list[int], k: int) -> float:
    """Mean share of the exact top-k found."""
    return round(sum(hits) / (k * len(hits)), 4) if hits else float("nan")


def local_intrinsic_dimension(vectors: np.ndarray, queries: np.ndarray, k: int = 20) -> dict[str, float]:
    """How hard the neighbourhoods are, to compare the synthetic bulk with the real MiniLM rows:
    the median MLE local intrinsic dimension (Levina-Bickel, on the k nearest) and the mean
    similarity of the 1st, 5th and k-th neighbour. Queries must not be in ``vectors``."""
    _, sims = exact_top_k(vectors, np.ones(len(vectors), dtype=bool), queries, k)
    dist = np.sqrt(np.maximum(2 - 2 * sims.astype(np.float64), 1e-12))
    lid = -1 / np.mean(np.log(dist[:, :-1] / dist[:, -1:]), axis=1)
    mean = sims.mean(axis=0)
    return {
        "lid_median": round(float(np.median(lid)), 1),
        "sim_top1": round(float(mean[0]), 3),
        "sim_top5": round(float(mean[4]), 3),
        f"sim_top{k}": round(float(mean[-1]), 3),
    }


# --- PostgreSQL binary COPY of memory_embedding --------------------------------------------------

EMBEDDING_COPY_COLUMNS = "kind, object_id, model, dimension, embedding, text_sha256, active, created_at"
COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
COPY_TRAILER = struct.pack(">h", -1)
PG_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


def _embedding_dtype(kind: str, model: str, dim: int) -> np.dtype:
    """One binary COPY tuple of memory_embedding, packed: a field count, then (length, value) per
    column, big-endian; ``vector``'s binary form is (dim, unused) as uint16 then float4s."""
    return np.dtype(
        [
            ("nfields", ">i2"),
            ("kind_len", ">i4"),
            ("kind", f"S{len(kind)}"),
            ("object_id_len", ">i4"),
            ("object_id", ">i8"),
            ("model_len", ">i4"),
            ("model", f"S{len(model)}"),
            ("dimension_len", ">i4"),
            ("dimension", ">i4"),
            ("vector_len", ">i4"),
            ("vector_dim", ">u2"),
            ("vector_unused", ">u2"),
            ("vector", ">f4", (dim,)),
            ("sha_len", ">i4"),
            ("sha", "S64"),
            ("active_len", ">i4"),
            ("active", "u1"),
            ("created_len", ">i4"),
            ("created", ">i8"),
        ]
    )


def embedding_copy_chunks(
    kind: str,
    model: str,
    object_ids: np.ndarray,
    vectors: np.ndarray,
    shas: list[bytes],
    active: np.ndarray,
    created: datetime,
    chunk: int = 20_000,
) -> Iterator[bytes]:
    """The whole binary COPY stream (header, tuples, trailer) in pieces of ``chunk`` rows, built
    with numpy: ~1 s per 100 000 rows where a Python loop over the rows would take ten times that."""
    dim = vectors.shape[1]
    dtype = _embedding_dtype(kind, model, dim)
    micros = int((created - PG_EPOCH).total_seconds() * 1_000_000)
    yield COPY_HEADER
    for start in range(0, len(object_ids), chunk):
        stop = min(start + chunk, len(object_ids))
        rows = np.zeros(stop - start, dtype=dtype)
        rows["nfields"] = 8
        rows["kind_len"], rows["kind"] = len(kind), kind.encode()
        rows["object_id_len"], rows["object_id"] = 8, object_ids[start:stop]
        rows["model_len"], rows["model"] = len(model), model.encode()
        rows["dimension_len"], rows["dimension"] = 4, dim
        rows["vector_len"], rows["vector_dim"], rows["vector"] = 4 + 4 * dim, dim, vectors[start:stop]
        rows["sha_len"], rows["sha"] = 64, shas[start:stop]
        rows["active_len"], rows["active"] = 1, active[start:stop]
        rows["created_len"], rows["created"] = 8, micros
        yield rows.tobytes()
    yield COPY_TRAILER


def sha256_hex(text: str) -> bytes:
    return hashlib.sha256(text.encode()).hexdigest().encode()
