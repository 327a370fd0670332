"""A web worker loads the local embedding model in the background as it starts
(controlplane/wsgi.py): the agents' injection blocks do not pay for it, and gunicorn's boot timeout
does not either."""

from __future__ import annotations

import json
import urllib.request

import pytest

from tests.support.keys import issue_key
from tests.support.manifests import load
from tests.support.processes import gunicorn, wait_for

LOADING = "[embeddings] reading the local model from"
LOADED = "[embeddings] local model loaded in"


@pytest.mark.process
@pytest.mark.django_db(transaction=True)
def test_a_web_worker_loads_the_model_as_it_starts_and_its_first_block_loads_nothing(tmp_path):
    key = issue_key(agent=load("agent.seo.vlevel"))
    body = {"story": "S-1", "domain": "seo", "project": "site", "query_text": "canonical tags on paginated lists"}

    with gunicorn(tmp_path, workers=1, threads=2, EMBEDDING_BACKEND="local") as base:
        log = tmp_path / "gunicorn.log"
        # Nobody asked for an embedding: the worker loads the model of its own accord.
        assert wait_for(lambda: LOADED in log.read_text(), timeout=120), log.read_text()[-3000:]
        request = urllib.request.Request(
            f"{base}/api/v1/memory/injection-block",
            data=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            block = json.loads(response.read())
        after = log.read_text()

    assert after.count(LOADING) == 1, after[-3000:]  # the block loaded nothing more
    statuses = {section["name"]: section["status"] for section in block["sections"]}
    assert "unavailable" not in (statuses["learnings"], statuses["veille"]), statuses
