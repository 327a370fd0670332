"""Helpers for tests that start real processes (Celery, make run) against the test database."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from django.conf import settings
from django.db import connection

from governance.kernel import env

PYTHON = sys.executable
BASE_DIR = Path(settings.BASE_DIR)


def database_url_of_tests() -> str:
    """A URL for the database this test run uses (the test_ one, not the development one)."""
    db = connection.settings_dict
    auth = quote(db["USER"]) + (":" + quote(db["PASSWORD"]) if db["PASSWORD"] else "")
    host = db["HOST"]
    if host.startswith("/"):
        return f"postgresql://{auth}@/{quote(db['NAME'])}?host={host}&port={db['PORT'] or 5432}"
    return f"postgresql://{auth}@{host}:{db['PORT'] or 5432}/{quote(db['NAME'])}"


def process_env(var_dir: Path, **extra: str) -> dict[str, str]:
    """Environment for a child process: its own var/ dir and queue, so nothing is shared with
    a `make run` on the same machine; Redis when it answers, else the filesystem broker."""
    child = dict(os.environ)
    child.pop("DATABASE_URL", None)
    child.update(
        DJANGO_SETTINGS_MODULE="controlplane.settings",
        VAR_DIR=str(var_dir),
        CELERY_QUEUE=f"test-{uuid.uuid4().hex[:8]}",
        CELERY_BROKER_URL="redis://127.0.0.1:6379/0" if env.redis_answers() else "filesystem://",
        PYTHONUNBUFFERED="1",
    )
    child.update(extra)
    return child


def plane_env(tmp_path: Path, port: int, **extra: str) -> dict[str, str]:
    """Environment for a whole plane started in ``tmp_path`` (`make run`, `serve`): its own embedded
    PostgreSQL and var/, on ``port``, with the light test-only embedder (it needs DEBUG) unless ``extra``
    names another: these tests are about starting and stopping, not about loading the model on a busy CI machine."""
    defaults = {"DEBUG": "1", "EMBEDDING_BACKEND": "hashing"}
    return process_env(
        tmp_path / "var", PORT=str(port), HOST="127.0.0.1", EMBEDDED_PGDATA=str(tmp_path / "pgdata"), **defaults | extra
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(condition: Callable[[], object], timeout: float, interval: float = 0.5) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(interval)
    return None


@dataclass
class Worker:
    """A running Celery worker started by `celery_worker_process`."""

    process: subprocess.Popen
    log: Path
    queue: str
    broker_url: str
    own_group: bool

    def kill(self) -> None:
        """SIGKILL the worker and its pool children at once, as a crash or an OOM kill would: no
        warm shutdown, no message acknowledged or given back. Needs ``own_group=True``."""
        assert self.own_group, "start the worker with own_group=True to kill its process group"
        with suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        """Warm shutdown (SIGTERM), then, in its own group, SIGKILL whatever is left of it (pool
        children of a main process that died first)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        if self.own_group:
            with suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)


def _fresh_broker_pools() -> None:
    """Forget this process's broker connections, so the next send uses the current broker_url."""
    from kombu import pools as kombu_pools

    from controlplane.celery import app

    app.pool.force_close_all()
    app._pool = None
    app.amqp._producer_pool = None
    kombu_pools.reset()


@contextmanager
def sending_to(queue: str, broker_url: str, transport_options: dict | None = None) -> Iterator[None]:
    """This process sends its tasks to ``queue`` on ``broker_url`` for the block (tasks can wait
    there before any worker runs); on exit the previous queue and broker come back and the broker
    pools start afresh: a pool closed here would otherwise refuse every later send of the run."""
    from controlplane.celery import app

    saved = app.conf.task_default_queue, app.conf.broker_url, dict(app.conf.broker_transport_options or {})
    app.conf.task_default_queue, app.conf.broker_url = queue, broker_url
    if transport_options is not None:
        app.conf.broker_transport_options = transport_options
    if broker_url != saved[1]:
        _fresh_broker_pools()  # pools made for the previous broker would still send there
    try:
        yield
    finally:
        app.conf.task_default_queue, app.conf.broker_url, app.conf.broker_transport_options = saved
        _fresh_broker_pools()


@contextmanager
def celery_worker_process(
    tmp_path: Path,
    *,
    wait_ready: bool = False,
    own_group: bool = False,
    log_name: str = "worker.log",
    **extra_env: str,
) -> Iterator[Worker]:
    """A real Celery worker (concurrency 2) on the test database, with this process sending to its
    queue; yields the `Worker`. ``own_group=True`` starts it in a session of its own, so
    `Worker.kill` can SIGKILL the main process and its pool children together.
    ``CELERY_QUEUE=...`` in ``extra_env`` starts it on an existing queue (a restart),
    ``CELERY_BROKER_URL=...`` on another broker. On exit the worker stops (whatever is left of
    its process group too) and this process sends where it did before."""
    child_env = process_env(tmp_path / "var", DATABASE_URL=database_url_of_tests(), **extra_env)
    options = None
    if child_env["CELERY_BROKER_URL"].startswith("filesystem"):
        folder = str(tmp_path / "var" / "celery" / "queue")
        options = {"data_folder_in": folder, "data_folder_out": folder}
    log_path = tmp_path / log_name
    with sending_to(child_env["CELERY_QUEUE"], child_env["CELERY_BROKER_URL"], options), open(log_path, "w") as log:
        process = subprocess.Popen(
            [PYTHON, "-m", "celery", "-A", "controlplane", "worker", "--loglevel", "INFO", "--concurrency", "2"],
            cwd=BASE_DIR,
            env=child_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=own_group,
        )
        worker = Worker(process, log_path, child_env["CELERY_QUEUE"], child_env["CELERY_BROKER_URL"], own_group)
        try:
            if wait_ready:
                assert wait_for(lambda: "ready" in log_path.read_text(), timeout=60)
            yield worker
        finally:
            worker.stop()


@contextmanager
def celery_worker(tmp_path: Path, *, wait_ready: bool = False, **extra_env: str) -> Iterator[Path]:
    """A real Celery worker on the test database, with this process sending to its queue; yields
    the worker's log file (`celery_worker_process` for more control)."""
    with celery_worker_process(tmp_path, wait_ready=wait_ready, own_group=False, **extra_env) as worker:
        yield worker.log


@contextmanager
def gunicorn(
    tmp_path: Path, *, workers: int = 2, threads: int = 8, options: tuple[str, ...] = (), **extra_env: str
) -> Iterator[str]:
    """gunicorn serving the project on the test database (``workers`` processes x ``threads``,
    and any other command-line ``options``); yields the base URL once /api/v1/health answers.
    ``extra_env`` adds to its environment (a `Worker`'s ``CELERY_QUEUE`` and ``CELERY_BROKER_URL``
    to queue to it)."""
    import urllib.request

    port = free_port()
    tmp_path.mkdir(parents=True, exist_ok=True)
    child_env = process_env(tmp_path / "var", DATABASE_URL=database_url_of_tests(), **extra_env)
    log_path = tmp_path / "gunicorn.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [
                *(sys.executable, "-m", "gunicorn", "controlplane.wsgi", "--bind", f"127.0.0.1:{port}"),
                *("--workers", str(workers), "--threads", str(threads), "--no-control-socket"),
                *options,
            ],
            cwd=BASE_DIR,
            env=child_env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        base = f"http://127.0.0.1:{port}"

        def healthy() -> bool:
            try:
                with urllib.request.urlopen(f"{base}/api/v1/health", timeout=2) as response:
                    return response.status == 200
            except OSError:
                return False

        try:
            assert wait_for(healthy, timeout=120), log_path.read_text()[-3000:]
            yield base
        finally:
            server.terminate()
            server.wait(timeout=30)


@contextmanager
def logged_process(command: list[str], child_env: dict[str, str], log_path: Path) -> Iterator[subprocess.Popen]:
    """``command`` run from the project in a session of its own (so a signal reaches all it starts),
    its output in ``log_path``, no stdin."""
    with open(log_path, "w") as log:
        yield subprocess.Popen(
            command,
            cwd=BASE_DIR,
            env=child_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


@contextmanager
def serving_plane(
    child_env: dict[str, str], log_path: Path, *, python: str = PYTHON, options: tuple[str, ...] = ("--no-demo",)
) -> Iterator[subprocess.Popen]:
    """`manage.py serve --role all` run by ``python`` (another venv's, to test an install), its output in
    ``log_path``; yields once it says "Control plane ready", and stops it with Ctrl-C (then SIGKILL) after."""
    with logged_process([python, "manage.py", "serve", "--role", "all", *options], child_env, log_path) as serve:
        try:
            assert wait_for(lambda: "Control plane ready" in log_path.read_text(), timeout=180), log_path.read_text()
            yield serve
        finally:
            os.killpg(serve.pid, signal.SIGINT)
            try:
                serve.wait(timeout=90)
            except subprocess.TimeoutExpired:
                os.killpg(serve.pid, signal.SIGKILL)
