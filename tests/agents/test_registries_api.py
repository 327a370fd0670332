"""/api/v1/registries: the fleet's open vocabularies (domains, intents, entity types, roles), read by
agents and operators, grown and retired by operators with the registry's permissions."""

from __future__ import annotations

import pytest

from agents.models import Domain, EntityType, Intent
from governance.kernel.models import AuditEvent
from tests.support.refusals import last_audit_id, nothing_written, refusals_since

REGISTRIES = ("domains", "intents", "entityTypes", "roles")


@pytest.mark.django_db
@pytest.mark.parametrize("caller", ["agent_api", "viewer_api", "admin_api"])
def test_agents_and_operators_read_every_registry_with_todays_values(request, caller):
    api = request.getfixturevalue(caller)

    response = api.get("/registries")

    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == set(REGISTRIES)
    assert {"value": "seo_audit", "label": "SEO audit", "retired": False} in body["intents"]
    assert {item["value"] for item in body["domains"]} >= {"core", "infra", "data", "seo", "rag", "cart", "aicos"}
    assert {item["value"] for item in body["entityTypes"]} == {"gamme", "vehicle", "article", "page", "all"}
    assert {item["value"] for item in body["roles"]} == {
        "architect",
        "analyzer",
        "executor",
        "validator",
        "orchestrator",
    }


@pytest.mark.django_db
def test_an_account_without_any_role_may_not_read_them(outsider_api):
    assert outsider_api.get("/registries").status_code == 403


@pytest.mark.django_db
def test_without_a_key_nothing_is_read_and_nothing_is_changed(anonymous_api):
    with nothing_written():
        statuses = [
            anonymous_api.get("/registries").status_code,
            anonymous_api.post("/registries/intents", {"value": "summarize_ticket"}).status_code,
            anonymous_api.send("patch", "/registries/intents/seo_audit", {"label": "Mine"}).status_code,
            anonymous_api.post("/registries/intents/seo_audit/retire").status_code,
        ]

    assert statuses == [401, 401, 401, 401]


@pytest.mark.django_db
def test_reading_them_costs_one_query(agent_api, django_assert_max_num_queries):
    agent_api.get("/registries")  # the key's first use writes its last-used time

    with django_assert_max_num_queries(3):  # the key, its last use, the four registries in one
        assert agent_api.get("/registries").status_code == 200


@pytest.mark.django_db
def test_an_operator_adds_a_value_with_its_label_and_the_trail_names_them(admin_api):
    response = admin_api.post("/registries/intents", {"value": "summarize_ticket", "label": "Summarize a ticket"})

    assert response.status_code == 201, response.content
    assert response.json() == {"value": "summarize_ticket", "label": "Summarize a ticket", "retired": False}
    entry = Intent.objects.get(value="summarize_ticket")
    assert entry.created_by == "user:alice"
    event = AuditEvent.objects.get(action="registry.added")
    assert (event.actor, event.target_id, event.data["registry"], event.data["value"]) == (
        "user:alice",
        str(entry.pk),
        "intents",
        "summarize_ticket",
    )


@pytest.mark.django_db
def test_a_value_added_without_a_label_is_labelled_after_itself(admin_api):
    response = admin_api.post("/registries/entityTypes", {"value": "ticket"})

    assert response.status_code == 201
    assert response.json()["label"] == "Ticket"


@pytest.mark.django_db
def test_adding_a_value_twice_is_idempotent(admin_api):
    first = admin_api.post("/registries/domains", {"value": "support", "label": "Support"})
    since = last_audit_id()

    with nothing_written():
        again = admin_api.post("/registries/domains", {"value": "support", "label": "Something else"})

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == {"value": "support", "label": "Support", "retired": False}
    assert Domain.objects.filter(value="support").count() == 1
    assert not AuditEvent.objects.filter(pk__gt=since).exists()


@pytest.mark.django_db
def test_an_unknown_registry_is_404(admin_api):
    assert admin_api.post("/registries/colours", {"value": "red"}).status_code == 404
    assert admin_api.post("/registries/colours/red/retire").status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize(
    "value",
    ["Summarize", "summarize ticket", "x" * 10_000, "", "  ", "1st", "ticket!", "tické", 42, None, ["ticket"], {}],
    ids=[
        "uppercase",
        "space",
        "10k",
        "empty",
        "blank",
        "digit-first",
        "punctuation",
        "accent",
        "int",
        "null",
        "list",
        "object",
    ],
)
def test_a_bad_value_is_422_naming_the_field_and_nothing_is_written(admin_api, value):
    with nothing_written():
        response = admin_api.post("/registries/intents", {"value": value})

    assert response.status_code == 422, response.content
    assert ["body", "value"] in [error["loc"] for error in response.json()["errors"]]


@pytest.mark.django_db
@pytest.mark.parametrize("label", ["x" * 201, 7, "line\u202ebreak"], ids=["too-long", "int", "hidden-character"])
def test_a_bad_label_is_422_naming_the_field(admin_api, label):
    with nothing_written():
        response = admin_api.post("/registries/intents", {"value": "summarize_ticket", "label": label})

    assert response.status_code == 422
    assert ["body", "label"] in [error["loc"] for error in response.json()["errors"]]


@pytest.mark.django_db
def test_a_missing_body_is_422(admin_api):
    response = admin_api.post("/registries/intents", {})

    assert response.status_code == 422
    assert ["body", "value"] in [error["loc"] for error in response.json()["errors"]]


@pytest.mark.django_db
@pytest.mark.parametrize("registry", REGISTRIES)
def test_an_agent_key_may_not_add_and_the_refusal_is_audited(agent_api, registry):
    since = last_audit_id()

    with nothing_written():
        response = agent_api.post(f"/registries/{registry}", {"value": "summarize_ticket"})

    assert response.status_code == 403
    refusals = refusals_since(since)
    assert [event.actor for event in refusals] == ["agent:agent.seo.vlevel"]


@pytest.mark.django_db
def test_an_agent_key_may_not_retire_or_relabel(agent_api):
    with nothing_written():
        retire = agent_api.post("/registries/intents/seo_audit/retire")
        relabel = agent_api.send("patch", "/registries/intents/seo_audit", {"label": "Mine"})

    assert (retire.status_code, relabel.status_code) == (403, 403)


@pytest.mark.django_db
def test_a_viewer_without_the_add_permission_is_refused(viewer_api):
    since = last_audit_id()

    with nothing_written():
        response = viewer_api.post("/registries/domains", {"value": "support"})

    assert response.status_code == 403
    assert "agents.add_domain" in response.json()["detail"]
    assert len(refusals_since(since)) == 1


@pytest.mark.django_db
def test_a_viewer_may_neither_retire_nor_relabel(viewer_api):
    with nothing_written():
        retire = viewer_api.post("/registries/domains/seo/retire")
        relabel = viewer_api.send("patch", "/registries/domains/seo", {"label": "Search"})

    assert (retire.status_code, relabel.status_code) == (403, 403)


@pytest.mark.django_db
def test_an_operator_retires_a_value_and_the_listing_says_so(admin_api, agent_api):
    response = admin_api.post("/registries/entityTypes/vehicle/retire")

    assert response.status_code == 200, response.content
    assert response.json() == {"value": "vehicle", "label": "Vehicle", "retired": True}
    entry = EntityType.objects.get(value="vehicle")
    assert entry.retired_by == "user:alice"
    assert entry.retired_at is not None
    listed = {item["value"]: item for item in agent_api.get("/registries").json()["entityTypes"]}
    assert listed["vehicle"]["retired"] is True
    event = AuditEvent.objects.get(action="registry.retired")
    assert (event.actor, event.data["registry"], event.data["value"]) == ("user:alice", "entityTypes", "vehicle")


@pytest.mark.django_db
def test_retiring_twice_changes_nothing_the_second_time(admin_api):
    admin_api.post("/registries/entityTypes/vehicle/retire")
    since = last_audit_id()

    again = admin_api.post("/registries/entityTypes/vehicle/retire")

    assert again.status_code == 200
    assert again.json()["retired"] is True
    assert not AuditEvent.objects.filter(pk__gt=since).exists()


@pytest.mark.django_db
def test_retiring_a_value_the_registry_does_not_have_is_404(admin_api):
    assert admin_api.post("/registries/intents/summarize_ticket/retire").status_code == 404


@pytest.mark.django_db
def test_adding_a_retired_value_again_reinstates_it(admin_api):
    admin_api.post("/registries/intents/kg_diagnose/retire")

    response = admin_api.post("/registries/intents", {"value": "kg_diagnose"})

    assert response.status_code == 200
    assert response.json()["retired"] is False
    entry = Intent.objects.get(value="kg_diagnose")
    assert (entry.retired_at, entry.retired_by) == (None, "")
    event = AuditEvent.objects.get(action="registry.reinstated")
    assert (event.actor, event.data["value"]) == ("user:alice", "kg_diagnose")


@pytest.mark.django_db
def test_an_operator_relabels_a_value_and_the_trail_keeps_both_labels(admin_api):
    response = admin_api.send("patch", "/registries/domains/seo", {"label": "Search engines"})

    assert response.status_code == 200, response.content
    assert response.json() == {"value": "seo", "label": "Search engines", "retired": False}
    event = AuditEvent.objects.get(action="registry.relabelled")
    assert event.actor == "user:alice"
    assert {k: event.data[k] for k in ("registry", "value", "previous", "label")} == {
        "registry": "domains",
        "value": "seo",
        "previous": "SEO",
        "label": "Search engines",
    }


@pytest.mark.django_db
def test_relabelling_needs_a_label(admin_api):
    response = admin_api.send("patch", "/registries/domains/seo", {"label": ""})

    assert response.status_code == 422
    assert ["body", "label"] in [error["loc"] for error in response.json()["errors"]]
