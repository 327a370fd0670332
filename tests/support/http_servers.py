"""Local HTTP servers standing in for what lies outside the product (a remote LLM provider, a
webhook receiver), so provider and notification tests go over a real socket without the internet."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that timed out closes the socket under a sleeping handler: expected, not news."""


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler], host: str = "127.0.0.1") -> Iterator[str]:
    """Serve ``handler`` on a free port of ``host`` (loopback) for the block; yields the base URL."""
    httpd = QuietServer((host, 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def answering_posts(answer: Callable[[str, dict[str, str], bytes], tuple[int, bytes]]) -> type[BaseHTTPRequestHandler]:
    """A handler for ``serving`` that reads each POST's body and sends back the status and body
    ``answer(path, headers, body)`` returns; it logs nothing."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            status, reply = answer(self.path, dict(self.headers.items()), body)
            self.send_response(status)
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


class SlowOllama:
    """Ollama's /api/embeddings, ``seconds`` per text, vectors of ``dimension`` derived from the
    text; counts the requests per text (on arrival), so a test sees any text embedded twice.
    While ``answering`` is cleared, requests wait: a test holds the work back until it is ready."""

    def __init__(self, *, seconds: float, dimension: int) -> None:
        self.seconds, self.dimension = seconds, dimension
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.answering = threading.Event()
        self.answering.set()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                text = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["prompt"]
                with outer.lock:
                    outer.calls[text] += 1
                outer.answering.wait()
                time.sleep(outer.seconds)
                digest = hashlib.blake2b(text.encode(), digest_size=outer.dimension).digest()
                body = json.dumps({"embedding": [byte / 255 for byte in digest]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler

    def snapshot(self) -> Counter[str]:
        with self.lock:
            return Counter(self.calls)
