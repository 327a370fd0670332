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
        SNAPSHOT.write_text(json.dumps(document, indent=2) + "\n")  # in the order served: clients read it so
    assert document == json.loads(SNAPSHOT.read_text()), "API changed: review, then UPDATE_SNAPSHOTS=1"


@pytest.mark.django_db
def test_the_docs_page_is_served_without_internet(client):
    html = client.get("/api/v1/docs").content.decode()
    assert "/static/ninja/swagger-ui-bundle.js" in html
    assert client.get("/static/ninja/swagger-ui-bundle.js").status_code == 200


# Health answers monitors; a trigger's webhook is proven by its HMAC signature instead of a key.
KEYLESS = {"/api/v1/health", "/api/v1/health/live", "/api/v1/health/ready", "/api/v1/triggers/{name}/webhook"}


@pytest.mark.django_db
def test_every_operation_but_health_and_signed_webhooks_requires_a_key(client):
    document = client.get("/api/v1/openapi.json").json()
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            secured = bool(operation.get("security"))
            assert secured is (path not in KEYLESS), f"{method.upper()} {path}"


@pytest.mark.django_db
def test_every_operation_names_its_operation_id(client):
    """Operation ids are what generated clients call their functions: each is written out in the
    route, never derived from the module path, so moving a module renames nothing."""
    from controlplane.api import api

    declared, seen = [], set()
    routers = [router for _prefix, router in api._routers]
    while routers:
        router = routers.pop()
        if id(router) in seen:
            continue
        seen.add(id(router))
        routers.extend(child for _prefix, child, _tags in router._routers)
        for path, view in router.path_operations.items():
            declared.extend((path, operation.operation_id) for operation in view.operations)
    document = client.get("/api/v1/openapi.json").json()
    assert len(declared) == sum(len(methods) for methods in document["paths"].values())
    missing = [path for path, operation_id in declared if not operation_id]
    assert missing == []
    ids = [operation_id for _, operation_id in declared]
    assert len(ids) == len(set(ids))
    assert all("_api_" not in operation_id for operation_id in ids)
