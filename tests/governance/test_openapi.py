"""The OpenAPI document is part of the contract with agents: any change to it shows up here.

After an intended API change, refresh the snapshot with `UPDATE_SNAPSHOTS=1 make test` and
review the diff like code.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

SNAPSHOT = Path(__file__).parent.parent / "snapshots" / "openapi.json"


@pytest.mark.django_db
def test_the_openapi_document_matches_its_snapshot(client):
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    document = response.json()
    if os.environ.get("UPDATE_SNAPSHOTS"):
        SNAPSHOT.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    assert document == json.loads(SNAPSHOT.read_text()), "API changed: review, then UPDATE_SNAPSHOTS=1"


@pytest.mark.django_db
def test_the_docs_page_is_served_without_internet(client):
    html = client.get("/api/v1/docs").content.decode()
    assert "/static/ninja/swagger-ui-bundle.js" in html
    assert client.get("/static/ninja/swagger-ui-bundle.js").status_code == 200


@pytest.mark.django_db
def test_every_operation_but_health_requires_a_key(client):
    document = client.get("/api/v1/openapi.json").json()
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            secured = bool(operation.get("security"))
            assert secured is (path != "/api/v1/health"), f"{method.upper()} {path}"
