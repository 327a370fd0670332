"""The official MCP conformance runner (``@modelcontextprotocol/conformance``, pinned in
tools/conformance/package-lock.json) against /mcp on the real web stack, for both protocol revisions.

The runner's server mode connects without headers, and /mcp needs an agent's Bearer key, so it talks
to a local forwarder that adds the key and passes everything else through (Host and Origin too: the
DNS-rebinding scenario sends a foreign Host and must be refused by /mcp itself, not here).
"""

from __future__ import annotations

import http.client
import json
import re
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from tests.support.keys import issue_key
from tests.support.manifests import load
from tests.support.processes import BASE_DIR, gunicorn

TOOLS = BASE_DIR / "tools" / "conformance"
NODE = BASE_DIR / "tools" / "inspector" / "node_modules" / ".bin" / "node"  # the Node 22 the inspector installs
RUNNERS = {  # 0.1.16 knows revisions up to 2025-11-25; 2026-07-28 only the 0.2.0 prereleases do
    "2025-11-25": TOOLS / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js",
    "2026-07-28": TOOLS / "node_modules" / "conformance-2026-07-28" / "dist" / "index.js",
}
SELECTION = {  # how each runner picks a revision's scenarios
    "2025-11-25": ("--spec-version", "2025-11-25"),
    "2026-07-28": ("--requirements", "2026-07-28"),
}

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.process,
    pytest.mark.skipif(
        not (NODE.exists() and all(runner.exists() for runner in RUNNERS.values())),
        reason="the conformance runner is not installed: make inspector conformance (needs npm)",
    ),
]

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}


@contextmanager
def keyed_forwarder(base: str, key: str) -> Iterator[str]:
    """A local HTTP forwarder to ``base`` that adds ``Authorization: Bearer <key>``; yields its URL."""
    target = urlsplit(base)

    class Forward(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _forward(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {name: value for name, value in self.headers.items() if name.lower() not in HOP_BY_HOP}
            headers["Authorization"] = f"Bearer {key}"
            upstream = http.client.HTTPConnection(target.netloc, timeout=60)
            try:
                upstream.request(self.command, self.path, body=body or None, headers=headers)
                answer = upstream.getresponse()
                content = answer.read()
                self.send_response(answer.status, answer.reason)
                for name, value in answer.getheaders():
                    if name.lower() not in HOP_BY_HOP | {"content-length"}:
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)
            finally:
                upstream.close()

        do_GET = do_POST = do_DELETE = _forward

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Forward)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


EXPECTED = yaml.safe_load((TOOLS / "expected-failures.yml").read_text(encoding="utf-8"))
FAILING = {"FAILURE", "WARNING"}  # as the runner's baseline mode counts them: a SHOULD not met fails too
RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


def not_scored(revision: str) -> set[str]:
    """The scenarios a revision's requirement set runs for visibility only (extensions, pending ones):
    the runner reports them and never counts them, and neither does this test."""
    if SELECTION[revision][0] != "--requirements":
        return set()
    requirements = RUNNERS[revision].parent.parent / "requirements" / f"{revision}.yaml"
    entries = yaml.safe_load(requirements.read_text(encoding="utf-8")).get("not_scored") or []
    return {entry["scenario"] for entry in entries if entry["leg"] == "server"}


def run(revision: str, url: str, out: Path, baseline: Path) -> subprocess.CompletedProcess[str]:
    """One run of the revision's runner over every scenario of that revision; results under ``out``."""
    return subprocess.run(
        [
            *(str(NODE), str(RUNNERS[revision]), "server", "--url", f"{url}/mcp", *SELECTION[revision]),
            *("--expected-failures", str(baseline), "-o", str(out)),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=out,
        env={"PATH": f"{NODE.parent}:/usr/bin:/bin", "HOME": str(Path.home()), "NO_COLOR": "1"},
    )


def checks_by_scenario(out: Path) -> dict[str, list[dict[str, Any]]]:
    """Each scenario the runner ran, with its checks (the runner's checks.json, one folder each)."""
    found: dict[str, list[dict[str, Any]]] = {}
    for checks in out.glob("server-*/checks.json"):
        match = RESULT_DIR.match(checks.parent.name)
        assert match, checks
        found[match.group("scenario")] = json.loads(checks.read_text(encoding="utf-8"))
    return found


def excused(entries: dict[str, str], scenario: str, check: str) -> bool:
    return scenario in entries or f"{scenario}:{check}" in entries


@pytest.mark.parametrize("revision", list(RUNNERS))
def test_the_official_runner_passes_every_scenario_but_the_fixture_ones(revision, tmp_path):
    entries: dict[str, str] = EXPECTED[revision]
    out = tmp_path / "results"
    out.mkdir()
    baseline = tmp_path / "baseline.yml"  # the runner's own format: names only, no reasons
    names = sorted(entries) if revision == "2026-07-28" else sorted({entry.split(":")[0] for entry in entries})
    baseline.write_text(yaml.safe_dump({"server": names}), encoding="utf-8")
    key = issue_key(agent=load("agent.seo.vlevel"))

    with gunicorn(tmp_path / "web", workers=1, threads=8) as base, keyed_forwarder(base, key) as url:
        completed = run(revision, url, out, baseline)

    ran = checks_by_scenario(out)
    output = completed.stdout[-6000:] + completed.stderr[-3000:]
    assert {"tools-list", "prompts-list", "dns-rebinding-protection"} <= set(ran), output
    scored = {scenario: checks for scenario, checks in ran.items() if scenario not in not_scored(revision)}
    failed = {
        (scenario, check["id"]): check
        for scenario, checks in scored.items()
        for check in checks
        if check["status"] in FAILING
    }
    unexpected = {
        f"{scenario}:{check_id}": {k: check.get(k) for k in ("errorMessage", "details")}
        for (scenario, check_id), check in failed.items()
        if not excused(entries, scenario, check_id)
    }
    assert not unexpected, json.dumps(unexpected, indent=2, default=str)[:8000]
    stale = [
        entry
        for entry in entries
        if not any(entry in (scenario, f"{scenario}:{check_id}") for scenario, check_id in failed)
    ]
    assert not stale, f"These pass now: remove them from tools/conformance/expected-failures.yml: {stale}"
    assert all(isinstance(reason, str) and reason.strip() for reason in entries.values()), entries
    assert completed.returncode == 0, output  # the runner agrees: no regression, no stale entry
