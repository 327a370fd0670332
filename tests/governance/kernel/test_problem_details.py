"""Every API error is application/problem+json with the failing field's path, and writes nothing."""

from __future__ import annotations

import pytest

from agents.models import Agent
from governance.kernel.models import AuditEvent

PROBLEM = "application/problem+json"


def assert_problem(response, status: int) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == PROBLEM
    body = response.json()
    assert body["status"] == status
    assert {"type", "title", "status", "detail", "errors"} <= body.keys()
    return body


@pytest.mark.django_db
def test_422_names_every_failing_body_field(admin_api):
    response = admin_api.post("/agents", {"agent_id": "Not-Snake-Case", "name": 42})

    body = assert_problem(response, 422)
    locs = {tuple(error["loc"]) for error in body["errors"]}
    assert locs == {("body", "agent_id"), ("body", "name")}
    assert all(error["msg"] and error["type"] for error in body["errors"])
    assert not Agent.objects.exists()
    assert not AuditEvent.objects.filter(action="agent.registered").exists()


@pytest.mark.django_db
def test_422_for_a_missing_field(admin_api):
    body = assert_problem(admin_api.post("/agents", {"name": "nameless"}), 422)
    assert body["errors"][0]["loc"] == ["body", "agent_id"]
    assert body["errors"][0]["type"] == "missing"


@pytest.mark.django_db
def test_422_for_an_invalid_query_parameter(admin_api):
    body = assert_problem(admin_api.get("/agents", {"limit": "-3"}), 422)
    assert body["errors"][0]["loc"] == ["query", "limit"]


@pytest.mark.django_db
def test_malformed_json_is_a_422_on_the_body_not_a_500(admin_api):
    body = assert_problem(admin_api.post("/agents", raw="{not json"), 422)
    assert body["errors"][0]["loc"] == ["body"]
    assert not Agent.objects.exists()


@pytest.mark.django_db
def test_404_for_an_unknown_object(admin_api):
    body = assert_problem(admin_api.get("/agents/agent.nobody"), 404)
    assert "agent.nobody" in body["detail"]


@pytest.mark.django_db
def test_404_for_an_unknown_api_path_is_problem_json_too(client):
    assert_problem(client.get("/api/v1/no/such/endpoint"), 404)


@pytest.mark.django_db
def test_409_when_the_agent_already_exists(admin_api, agent):
    body = assert_problem(admin_api.post("/agents", {"agent_id": agent.agent_id}), 409)
    assert body["agent_id"] == agent.agent_id
    assert Agent.objects.count() == 1


@pytest.mark.django_db
def test_413_for_a_body_over_one_mebibyte(admin_api):
    oversized = '{"agent_id": "agent.big", "name": "' + "x" * (1024 * 1024) + '"}'

    body = assert_problem(admin_api.post("/agents", raw=oversized), 413)
    assert "limit" in body["detail"]
    assert not Agent.objects.exists()


@pytest.mark.django_db
def test_a_body_just_under_the_limit_is_read(admin_api):
    padded = '{"agent_id": "agent.small", "name": "ok"' + " " * (1024 * 1024 - 100) + "}"

    assert admin_api.post("/agents", raw=padded).status_code == 201


@pytest.mark.django_db
def test_401_is_problem_json_with_a_bearer_challenge(anonymous_api):
    response = anonymous_api.get("/agents")
    assert_problem(response, 401)
    assert response["WWW-Authenticate"] == "Bearer"
