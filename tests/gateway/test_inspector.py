"""The MCP Inspector's CLI (``@modelcontextprotocol/inspector``, a client no one here wrote) lists
the tools of /mcp and calls one, against the real web stack (gunicorn)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.keys import issue_key
from tests.support.manifests import load
from tests.support.processes import BASE_DIR, gunicorn

INSPECTOR = BASE_DIR / "tools" / "inspector" / "node_modules" / ".bin" / "mcp-inspector"

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.process,
    pytest.mark.skipif(not INSPECTOR.exists(), reason="the MCP Inspector is not installed: make inspector (needs npm)"),
]


def inspect(url: str, key: str, *arguments: str) -> Any:
    """Run the inspector's CLI once; its JSON answer."""
    node_bin = str(INSPECTOR.parent)  # the Node 22 the inspector needs, installed next to it
    completed = subprocess.run(
        [
            *(str(INSPECTOR), "--cli", f"{url}/mcp", "--transport", "http"),
            *("--header", f"Authorization: Bearer {key}", *arguments),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": f"{node_bin}:/usr/bin:/bin", "HOME": str(Path.home()), "MCP_CATALOG_PATH": "/dev/null"},
    )
    assert completed.returncode == 0, completed.stdout[-2000:] + completed.stderr[-2000:]
    return json.loads(completed.stdout)


def test_the_inspector_lists_the_tools_and_calls_one(tmp_path):
    key = issue_key(agent=load("agent.seo.vlevel"))

    with gunicorn(tmp_path, workers=1, threads=4) as url:
        listed = inspect(url, key, "--method", "tools/list")
        called = inspect(
            url,
            key,
            *("--method", "tools/call", "--tool-name", "get_injection_block"),
            *("--tool-arg", "story=S-1", "domain=seo", "project=site", "query_text=canonical tags"),
        )

    names = {tool["name"] for tool in listed["tools"]}
    assert {"submit_job", "get_injection_block", "validate_output"} <= names
    assert not called.get("isError"), called
    assert "_aucun résultat_" in called["structuredContent"]["markdown"]
