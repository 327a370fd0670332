"""`make run` from the outside: it comes up healthy on a fresh data directory, serves the
admin, the API docs and health, and Ctrl-C stops every process it started, database included.
The first start prints the demo credentials and saves them to a private file; a second start on
the same data prints only where that file is."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

from tests.support.processes import free_port, logged_process, plane_env, wait_for

pytestmark = pytest.mark.process


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except OSError:
        return 0, b""


def _alive(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@contextmanager
def make_run(child_env: dict[str, str], log_path: Path) -> Iterator[subprocess.Popen]:
    """`make run` in its own session, its output in ``log_path``; killed if the test leaves it running."""
    with logged_process(["make", "run"], child_env, log_path) as make:
        try:
            yield make
        finally:
            if make.poll() is None:
                os.killpg(make.pid, signal.SIGKILL)


def test_make_run_serves_and_stops_cleanly_on_ctrl_c(tmp_path):
    port = free_port()
    pgdata = tmp_path / "pgdata"
    child_env = plane_env(tmp_path, port)
    child_env.pop("CELERY_BROKER_URL")  # let the project choose, as it does on a real `make run`
    log_path = tmp_path / "run.log"
    base = f"http://127.0.0.1:{port}"

    with make_run(child_env, log_path) as make:
        healthy = wait_for(lambda: _get(f"{base}/api/v1/health")[0] == 200, timeout=180)
        assert healthy, log_path.read_text()[-4000:]
        health = json.loads(_get(f"{base}/api/v1/health")[1])
        assert health["database"] == health["vector"] == "ok"
        assert health["broker"] == "ok"
        assert _get(f"{base}/admin/login/")[0] == 200
        assert _get(f"{base}/api/v1/docs")[0] == 200
        assert _get(f"{base}/static/css/app.css")[0] == 200
        assert wait_for(lambda: "Control plane ready" in log_path.read_text(), timeout=30)

        processes = psutil.Process(make.pid).children(recursive=True)
        postmaster = psutil.Process(int((pgdata / "postmaster.pid").read_text().split()[0]))
        assert len(processes) >= 4  # serve, web, worker, beat (and their own children)

        os.killpg(make.pid, signal.SIGINT)  # what Ctrl-C in the terminal does
        make.wait(timeout=90)

    output = log_path.read_text()
    assert "Demo account: reviewer / " in output
    credentials = tmp_path / "var" / "demo-credentials.txt"
    assert stat.S_IMODE(credentials.stat().st_mode) == 0o600
    # The ready banner repeats what a newcomer needs, below whatever the workers logged first.
    banner = output[output.index("Control plane ready") :]
    assert f"Demo credentials: {credentials}" in banner
    for line in (
        "Demo account: admin / ",
        "Demo account: reviewer / ",
        "Demo agent key for ",
        "Demo operator key for admin: ",
    ):
        assert line in banner, banner
    assert re.search(r"Broker: (Redis at 127\.0\.0\.1:6379 \(found running\)|filesystem queue in )", output)
    assert f"{base}/admin/" in output
    assert f"{base}/inbox/" in output
    assert f"{base}/api/v1/docs" in output
    assert "Embedded PostgreSQL stopped." in output
    assert wait_for(lambda: not any(_alive(p) for p in [*processes, postmaster]), timeout=30), [
        p for p in [*processes, postmaster] if _alive(p)
    ]
    assert _get(f"{base}/api/v1/health")[0] == 0


def test_a_second_make_run_prints_where_the_credentials_are_not_what_they_are(tmp_path):
    port = free_port()
    child_env = plane_env(tmp_path, port)
    credentials = tmp_path / "var" / "demo-credentials.txt"

    first = _run_until_ready(child_env, port, tmp_path / "first.log")
    saved = credentials.read_text(encoding="utf-8")
    second = _run_until_ready(child_env, port, tmp_path / "second.log")

    secrets = re.findall(r"Demo account: \S+ / (\S+) ", first) + re.findall(r"Demo \w+ key for \S+: (\S+)", first)
    assert len(set(secrets)) == 6  # admin, reviewer, three demo agents, the operator key
    assert not any(secret in second for secret in secrets)
    assert "Demo account:" not in second
    assert "Demo agent key" not in second
    assert "Demo operator key" not in second
    assert f"Demo credentials: see {credentials}" in second
    assert credentials.read_text(encoding="utf-8") == saved


def _run_until_ready(child_env: dict[str, str], port: int, log_path) -> str:
    """One `make run` until it says it is ready, then Ctrl-C; returns what it printed."""
    with make_run(child_env, log_path) as make:
        ready = wait_for(lambda: "Control plane ready" in log_path.read_text(), timeout=180)
        assert ready, log_path.read_text()[-4000:]
        os.killpg(make.pid, signal.SIGINT)
        make.wait(timeout=90)
    assert _get(f"http://127.0.0.1:{port}/api/v1/health")[0] == 0
    return log_path.read_text()


def _postmaster_pid(pgdata: Path) -> int | None:
    """The pid in postmaster.pid, or None between a dead server's file and the next one's."""
    try:
        return int((pgdata / "postmaster.pid").read_text().split()[0])
    except (FileNotFoundError, IndexError, ValueError):
        return None


def _child(serve: psutil.Process, *words: str) -> psutil.Process | None:
    """The direct child of `serve` whose command line holds every word (the worker's main process,
    gunicorn's master), or None while there is none."""
    for child in serve.children():
        try:
            if _alive(child) and all(word in child.cmdline() for word in words):
                return child
        except psutil.NoSuchProcess:
            continue
    return None


def test_a_crashed_worker_web_server_or_database_is_started_again_and_the_plane_keeps_serving(tmp_path):
    port = free_port()
    child_env = plane_env(tmp_path, port)
    log_path = tmp_path / "run.log"
    base = f"http://127.0.0.1:{port}"
    with make_run(child_env, log_path) as make:
        assert wait_for(lambda: "Control plane ready" in log_path.read_text(), timeout=180), log_path.read_text()
        serve = next(p for p in psutil.Process(make.pid).children(recursive=True) if "serve" in p.cmdline())

        for words in (("celery", "worker"), ("gunicorn",)):
            crashed = _child(serve, *words)
            crashed.kill()  # kill -9: no chance to clean up
            replaced = wait_for(lambda w=words, c=crashed: (new := _child(serve, *w)) and new.pid != c.pid, 60)
            assert replaced, log_path.read_text()[-3000:]
            assert wait_for(lambda: _get(f"{base}/api/v1/health")[0] == 200, timeout=60)

        postmaster = psutil.Process(_postmaster_pid(tmp_path / "pgdata"))
        postmaster.kill()  # kill -9 of the postmaster: its pid file stays behind
        restarted = wait_for(lambda: _postmaster_pid(tmp_path / "pgdata") not in (None, postmaster.pid), timeout=60)
        assert restarted, log_path.read_text()[-3000:]
        assert wait_for(lambda: _get(f"{base}/api/v1/health")[0] == 200, timeout=60), log_path.read_text()[-3000:]

        assert _alive(serve)
        output = log_path.read_text()
        assert "worker exited with code -9; starting it again in 1 s." in output
        assert "web exited with code -9; starting it again in 1 s." in output
        assert "embedded PostgreSQL is not running; starting it again in 1 s." in output
        # start_embedded returns (and serve says so) once its own checks are done, which may be after
        # the new postmaster already answers the health check: wait for the line, as for the rest.
        started = wait_for(lambda: "embedded PostgreSQL started again." in log_path.read_text(), timeout=60)
        assert started, log_path.read_text()[-3000:]
        # A 5 s timeout on a loaded machine is no answer: ask until one comes.
        answered = wait_for(lambda: (response := _get(f"{base}/api/v1/health"))[0] == 200 and response, timeout=60)
        assert answered, log_path.read_text()[-3000:]
        health = json.loads(answered[1])
        assert (health["database"], health["broker"]) == ("ok", "ok")
        os.killpg(make.pid, signal.SIGINT)
        make.wait(timeout=90)
    assert "Embedded PostgreSQL stopped." in log_path.read_text()
