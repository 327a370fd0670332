"""No endpoint answers 500 to bad input: every operation of the OpenAPI document, fed garbage,
answers a 4xx problem+json. New endpoints are covered as soon as they are mounted."""

from __future__ import annotations

import re

import pytest

from governance.api import api

GARBAGE_BODIES: list[bytes] = [
    b"",
    b"null",
    b"[]",
    b'"a string"',
    b"12345678901234567890123456789",
    b'{"unexpected": {"deeply": [[[[{"nested": null}]]]]}}',
    b'{"agent_id": null, "name": 1e309}',
    b"\xff\xfe\x00 not utf-8",
    b"{" * 5000,
]


def _operations() -> list[tuple[str, str, bool]]:
    schema = api.get_openapi_schema(path_prefix="/api/v1")
    found = []
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            found.append((method, path, "requestBody" in operation))
    return found


OPERATIONS = _operations()


def _concrete(path: str, agent_id: str) -> str:
    return re.sub(r"\{[^}]+\}", lambda m: agent_id if m.group(0) == "{agent_id}" else "x", path)


@pytest.mark.django_db
@pytest.mark.parametrize(("method", "path"), [(m, p) for m, p, body in OPERATIONS if body])
@pytest.mark.parametrize("body", GARBAGE_BODIES, ids=range(len(GARBAGE_BODIES)))
def test_garbage_bodies_get_a_4xx_problem(admin_api, agent, method, path, body):
    url = _concrete(path, agent.agent_id)
    response = getattr(admin_api.client, method)(
        url, data=body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {admin_api.key}"
    )
    assert 400 <= response.status_code < 500, response.content[:500]
    assert response["Content-Type"] == "application/problem+json"


@pytest.mark.django_db
@pytest.mark.parametrize(("method", "path"), [(m, p) for m, p, _ in OPERATIONS])
def test_garbage_query_strings_and_path_parts_get_no_500(admin_api, method, path):
    url = _concrete(path, "not a valid id ../%00") + "?limit=abc&offset=-1&q=%ff"
    response = getattr(admin_api.client, method)(
        url, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {admin_api.key}"
    )
    assert response.status_code < 500, response.content[:500]


@pytest.mark.django_db
def test_a_wrong_method_is_a_405_problem(client):
    response = client.delete("/api/v1/health")
    assert response.status_code == 405
    assert response["Content-Type"] == "application/problem+json"
    assert "GET" in response["Allow"]
