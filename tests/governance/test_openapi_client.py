"""A Python client generated from the OpenAPI snapshot with openapi-python-client (pinned in
requirements/dev.in) imports, has one function module per operation, and drives a live server:
submit, lease, result, artifacts, the injection block, the Markdown export and error bodies.

The generator runs offline on tests/snapshots/openapi.json (the document as served, in its order)
with the settings next to it (openapi-python-client.yaml). It warns about the two raw bodies it
cannot send (YAML manifest, Markdown note; their JSON forms are there) and nothing else: any other
warning means a part of the API the client silently lacks: fix the API's declarations, then refresh
the snapshot (see test_openapi.py).
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import httpx
import pytest

from tests.agents.test_job_lifecycle import result
from tests.agents.test_jobs import envelope
from tests.support.keys import issue_key

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


# The generator's only warnings: the raw alternatives of two bodies that also take JSON.
EXPECTED_WARNINGS = {
    "WARNING parsing PUT /api/v1/agents/{agent_id}/manifest within agents.": (
        "Unsupported content type application/yaml"
    ),
    "WARNING parsing POST /api/v1/memory/veille within memory.": "Unsupported content type text/markdown",
}


def test_the_generator_warns_only_about_the_two_raw_bodies(generated):
    _, output = generated
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    warnings = {line: lines[i + 1] for i, line in enumerate(lines) if line.startswith("WARNING")}
    assert warnings == EXPECTED_WARNINGS, output
    stray = [line for line in lines if line.startswith(("WARNING", "ERROR", "Unable", "Traceback"))]
    assert len(stray) == len(EXPECTED_WARNINGS), output


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


@pytest.mark.parametrize("status", [200, 201])
def test_both_manifest_answers_parse_as_one_model(client_package, status):
    put_manifest = importlib.import_module(f"{client_package.__name__}.api.agents.put_manifest")
    manifest_out = importlib.import_module(f"{client_package.__name__}.models").ManifestOut
    client = client_package.AuthenticatedClient(base_url="http://testserver", token="unused")
    answer = httpx.Response(status, json={"id": "agent.seo.vlevel", "version": "1.0.0", "warnings": []})

    parsed = put_manifest._parse_response(client=client, response=answer)

    assert isinstance(parsed, manifest_out)
    assert parsed["version"] == "1.0.0"


def _modules(client_package: ModuleType, *names: str) -> list[ModuleType]:
    return [importlib.import_module(f"{client_package.__name__}.{name}") for name in names]


def test_a_generated_client_drives_a_job_from_submit_to_result_on_a_live_server(client_package, served, vlevel):
    submit_job, lease_job, submit_result, download_artifact, get_job = _modules(
        client_package,
        *(f"api.jobs.{name}" for name in ("submit_job", "lease_job", "submit_result", "download_artifact", "get_job")),
    )
    models = importlib.import_module(f"{client_package.__name__}.models")
    client = client_package.AuthenticatedClient(base_url=served, token=issue_key(agent=vlevel))

    submitted = submit_job.sync(client=client, body=models.JobEnvelopeIn.from_dict(envelope()))
    assert isinstance(submitted, models.JobOut), submitted
    assert submitted.status == "queued"
    leased = lease_job.sync(submitted.job_id, client=client)  # no body: the key's prefix owns the lease
    assert isinstance(leased, models.JobOut), leased
    assert leased.status == "running"
    finished = submit_result.sync(submitted.job_id, client=client, body=models.AgentOutput.from_dict(result()))
    assert isinstance(finished, models.JobResultOut), finished
    assert finished.status == "succeeded"

    audit = download_artifact.sync(submitted.job_id, models.DownloadArtifactKind.AUDIT, client=client)
    assert isinstance(audit, str), audit
    assert audit.startswith("# "), audit
    missing = get_job.sync(uuid.uuid4(), client=client)
    assert isinstance(missing, models.ProblemDetails), missing
    assert (missing.status, missing.title) == (404, "Not Found")


def test_a_generated_client_reads_the_injection_block_the_markdown_export_and_a_contract_report(
    client_package, served, vlevel, catalog
):
    get_injection_block, post_clarifications, export_clarifications, validate = _modules(
        client_package,
        "api.memory.get_injection_block",
        "api.memory.post_clarifications",
        "api.memory.export_clarifications",
        "api.contracts.validate_contract_output",
    )
    models = importlib.import_module(f"{client_package.__name__}.models")
    client = client_package.AuthenticatedClient(base_url=served, token=issue_key(agent=vlevel))

    query = {"story": "PD-7", "domain": "seo", "project": "site", "query_text": "flaky crawls"}
    block = get_injection_block.sync(client=client, body=models.InjectionIn.from_dict(query))
    assert isinstance(block, models.InjectionOut), block
    assert block.markdown.startswith("#")

    answers = {"story": "PD-7", "domain": "seo", "project": "site", "answers": ["a", "b", "c", "d"]}
    created = post_clarifications.sync(client=client, body=models.ClarificationsIn.from_dict(answers))
    assert isinstance(created, models.ClarificationsCreatedOut), created
    markdown = export_clarifications.sync("PD-7", client=client)
    assert isinstance(markdown, str), markdown
    assert "PD-7" in markdown, markdown

    broken = {"rankings": [{"id": "three", "rank": 0}]}
    report = validate.sync(
        "memory_retrieval_ranking", client=client, body=models.ValidateIn.from_dict({"output": broken})
    )
    assert isinstance(report, models.ReportOut), report
    assert not report.compliant
    assert report.violations
    assert all(isinstance(v, models.ContractViolation) for v in report.violations)
    assert {v.path for v in report.violations} >= {"rankings[0].id"}
