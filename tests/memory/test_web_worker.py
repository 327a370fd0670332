"""A web worker loads the local embedding model as it starts (governance/wsgi.py): the agents'
injection blocks, which embed their query, never wait for it."""

from __future__ import annotations

import json
import urllib.request

import pytest

from tests.support.keys import issue_key
from tests.support.manifests import load
from tests.support.processes import gunicorn

LOADING = "Loading SentenceTransformer model"


@pytest.mark.process
@pytest.mark.django_db(transaction=True)
def test_a_web_worker_loads_the_model_before_its_first_block_not_during_it(tmp_path):
    key = issue_key(agent=load("agent.seo.vlevel"))
    body = {"story": "S-1", "domain": "seo", "project": "site", "query_text": "canonical tags on paginated lists"}

    with gunicorn(tmp_path, workers=1, threads=2, EMBEDDING_BACKEND="local") as base:
        log = tmp_path / "gunicorn.log"
        at_start = log.read_text()
        request = urllib.request.Request(
            f"{base}/api/v1/memory/injection-block",
            data=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            block = json.loads(response.read())
        after = log.read_text()

    # Loaded once, before the worker answered its health check; the block loaded nothing more.
    assert at_start.count(LOADING) == 1, at_start[-3000:]
    assert "[embeddings] local model loaded in" in at_start
    assert after.count(LOADING) == 1, after[-3000:]
    statuses = {section["name"]: section["status"] for section in block["sections"]}
    assert "unavailable" not in (statuses["learnings"], statuses["veille"]), statuses
