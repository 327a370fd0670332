"""A Python client generated from the OpenAPI snapshot with openapi-python-client (pinned in
requirements/dev.in) builds without a warning, imports, and has one function module per operation.

The generator runs offline on tests/snapshots/openapi.json with the settings next to it
(openapi-python-client.yaml: YAML and Markdown bodies read as raw bytes, no ruff post-hooks).
A warning there means a part of the API the client silently lacks: fix the API's declarations,
then refresh the snapshot (see test_openapi.py).
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
from collections.abc import Iterator
from io import BytesIO
from pathlib import Path
from types import ModuleType

import httpx
import pytest

SNAPSHOT = Path(__file__).parent.parent / "snapshots" / "openapi.json"
CONFIG = SNAPSHOT.with_name("openapi-python-client.yaml")

# One worker runs them all (make test uses --dist loadgroup), so the client is generated once.
pytestmark = pytest.mark.xdist_group("openapi-client")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The generator's output folder and everything it printed."""
    out = tmp_path_factory.mktemp("openapi_client") / "client"
    command = [sys.executable, "-m", "openapi_python_client", "generate"]
    command += ["--path", str(SNAPSHOT), "--output-path", str(out), "--config", str(CONFIG)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"exit {done.returncode}:\n{output}"
    return out, output


@pytest.fixture(scope="module")
def client_package(generated: tuple[Path, str]) -> Iterator[ModuleType]:
    """The generated package, imported from the output folder (and forgotten afterwards)."""
    out, _ = generated
    [package_dir] = [path for path in out.iterdir() if (path / "__init__.py").is_file()]
    sys.path.insert(0, str(out))
    try:
        yield importlib.import_module(package_dir.name)
    finally:
        sys.path.remove(str(out))
        for name in [name for name in sys.modules if name.partition(".")[0] == package_dir.name]:
            del sys.modules[name]


def test_the_generator_prints_nothing_but_its_progress_line(generated):
    out, output = generated
    unexpected = [line for line in output.splitlines() if line.strip() and line.strip() != f"Generating {out}"]
    assert unexpected == [], f"the generator warned:\n{output}"


def test_every_operation_has_an_importable_module(client_package):
    operation_ids = {
        operation["operationId"]
        for methods in json.loads(SNAPSHOT.read_text())["paths"].values()
        for operation in methods.values()
    }
    api = importlib.import_module(f"{client_package.__name__}.api")
    modules = {}
    for info in pkgutil.walk_packages(api.__path__, f"{api.__name__}."):
        if not info.ispkg:
            modules[info.name.rpartition(".")[2]] = importlib.import_module(info.name)
    assert set(modules) == operation_ids
    for name in ("submit_job", "get_job", "put_manifest", "post_veille"):
        for function in ("sync", "sync_detailed", "asyncio", "asyncio_detailed"):
            assert callable(getattr(modules[name], function)), f"{name}.{function}"


def test_raw_yaml_and_markdown_bodies_keep_their_media_type(client_package):
    file_type = importlib.import_module(f"{client_package.__name__}.types").File
    put_manifest = importlib.import_module(f"{client_package.__name__}.api.agents.put_manifest")
    post_veille = importlib.import_module(f"{client_package.__name__}.api.memory.post_veille")

    manifest = put_manifest._get_kwargs("agent.seo.vlevel", body=file_type(payload=BytesIO(b"id: agent.seo.vlevel")))
    note = post_veille._get_kwargs(body=file_type(payload=BytesIO(b"---\ntitle: T\n---\n")), name="t.md")

    assert manifest["headers"]["Content-Type"] == "application/yaml"
    assert note["headers"]["Content-Type"] == "text/markdown"


@pytest.mark.parametrize("status", [200, 201])
def test_both_manifest_answers_parse_as_one_model(client_package, status):
    put_manifest = importlib.import_module(f"{client_package.__name__}.api.agents.put_manifest")
    manifest_out = importlib.import_module(f"{client_package.__name__}.models").ManifestOut
    client = client_package.AuthenticatedClient(base_url="http://testserver", token="unused")
    answer = httpx.Response(status, json={"id": "agent.seo.vlevel", "version": "1.0.0", "warnings": []})

    parsed = put_manifest._parse_response(client=client, response=answer)

    assert isinstance(parsed, manifest_out)
    assert parsed["version"] == "1.0.0"
