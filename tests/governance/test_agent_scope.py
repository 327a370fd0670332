"""An agent key sees and touches only its own agent; operators act with their permissions."""

from __future__ import annotations

import pytest


@pytest.mark.django_db
def test_another_agent_is_not_found_by_an_agent_key(other_agent_api, agent):
    response = other_agent_api.get(f"/agents/{agent.agent_id}")
    assert response.status_code == 404  # as an agent that does not exist: an agent key sees only its own
    assert response["Content-Type"] == "application/problem+json"


@pytest.mark.django_db
def test_an_agent_lists_only_itself(agent_api, agent, other_agent):
    body = agent_api.get("/agents").json()
    assert body == {"count": 1, "items": [body["items"][0]]}
    assert body["items"][0]["agent_id"] == agent.agent_id


@pytest.mark.django_db
def test_a_viewer_reads_every_agent(viewer_api, agent, other_agent):
    body = viewer_api.get("/agents").json()
    assert body["count"] == 2
    assert viewer_api.get(f"/agents/{agent.agent_id}").status_code == 200


@pytest.mark.django_db
def test_an_operator_without_a_role_is_forbidden(outsider_api, agent):
    assert outsider_api.get(f"/agents/{agent.agent_id}").status_code == 403
    assert outsider_api.get("/agents").json() == {"count": 0, "items": []}


@pytest.mark.django_db
def test_only_admins_register_agents(viewer_api, agent_api, admin_api):
    assert viewer_api.post("/agents", {"agent_id": "agent.new"}).status_code == 403
    assert agent_api.post("/agents", {"agent_id": "agent.new"}).status_code == 403

    response = admin_api.post("/agents", {"agent_id": "agent.new", "name": "New"})
    assert response.status_code == 201
    assert response.json()["agent_id"] == "agent.new"


@pytest.mark.django_db
def test_the_list_is_paginated(admin_api):
    for n in range(5):
        admin_api.post("/agents", {"agent_id": f"agent.page.a{n}"})

    body = admin_api.get("/agents", {"limit": 2, "offset": 2}).json()
    assert body["count"] == 5
    assert [item["agent_id"] for item in body["items"]] == ["agent.page.a2", "agent.page.a3"]


@pytest.mark.django_db
def test_listing_agents_costs_a_fixed_number_of_queries(admin_api, django_assert_max_num_queries):
    for n in range(20):
        admin_api.post("/agents", {"agent_id": f"agent.q.a{n}"})
    with django_assert_max_num_queries(6):
        assert admin_api.get("/agents").json()["count"] == 20
