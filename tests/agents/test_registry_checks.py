"""Manifests, jobs, learnings and triggers take their domains, intents, entity types and roles from
the registries: an author's own value is refused (naming the registry and how an operator adds to
it) until an operator adds it, then accepted; a retired value stays on what already has it and is
refused for anything new."""

from __future__ import annotations

import pytest
import yaml
from django.core.exceptions import ValidationError

from agents import registries, triggers
from agents.models import Agent, Job, JobTrigger
from agents.vocabulary import Registry
from governance.kernel.principals import SYSTEM
from memory.models import Learning
from tests.support.api import Api
from tests.support.jobs import submit_job
from tests.support.keys import issue_key
from tests.support.manifests import writes_into
from tests.support.refusals import nothing_written

YAML = "application/yaml"
TRIAGE = {
    "id": "agent.support.triage",
    "name": "Ticket triage",
    "role": "executor",
    "domain": "support",
    "version": "1.0.0",
    "owner": "support-team",
    "intents": ["summarize_ticket"],
}
TICKET_JOB = {
    "intent": "summarize_ticket",
    "scope": {"entityType": "ticket", "entityIds": ["T-1"]},
    "payload": {},
    "context": {"source": "manual"},
}
AUDIT = {
    "intent": "seo_audit",
    "scope": {"entityType": "page"},
    "payload": {"urls": ["https://shop.test/"]},
    "context": {"source": "manual"},
}
LEARNING = {"story": "PD-9", "gate": 3, "domain": "seo", "project": "shop", "tags": ["#x"], "text": "t"}


def errors_at(response, *loc) -> list[dict]:
    return [error for error in response.json()["errors"] if error["loc"] == ["body", *loc]]


def load_triage(admin_api) -> Api:
    response = admin_api.put(
        "/agents/agent.support.triage/manifest", raw=yaml.safe_dump({"Agent": TRIAGE}), content_type=YAML
    )
    assert response.status_code == 201, response.content
    return response


# An author's own values --------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_manifest_in_an_unknown_domain_is_refused_naming_the_registry_and_how_to_add_to_it(admin_api):
    with nothing_written():
        response = admin_api.put(
            "/agents/agent.support.triage/manifest", raw=yaml.safe_dump({"Agent": TRIAGE}), content_type=YAML
        )

    assert response.status_code == 422, response.content
    [domain] = errors_at(response, "domain")
    assert domain["type"] == "registry_unknown"
    assert "unknown domain 'support': not in the domains registry" in domain["msg"]
    assert "POST /api/v1/registries/domains" in domain["msg"]
    assert "manage.py registry add domains support" in domain["msg"]
    [intent] = errors_at(response, "intents", 0)
    assert "not in the intents registry" in intent["msg"]
    assert not errors_at(response, "role")  # executor is a seed value


@pytest.mark.django_db
def test_an_authors_agent_works_once_an_operator_adds_its_values(admin_api, client):
    assert admin_api.post("/registries/domains", {"value": "support", "label": "Support"}).status_code == 201
    assert admin_api.post("/registries/intents", {"value": "summarize_ticket"}).status_code == 201

    load_triage(admin_api)

    triage = Api(client, issue_key(agent=Agent.objects.get(agent_id="agent.support.triage")))
    refused = triage.post("/jobs", TICKET_JOB)
    assert refused.status_code == 422, refused.content
    [entity] = errors_at(refused, "scope", "entityType")
    assert "unknown entity type 'ticket': not in the entityTypes registry" in entity["msg"]
    assert "manage.py registry add entityTypes ticket" in entity["msg"]
    assert triage.post("/jobs/validate", TICKET_JOB).status_code == 422
    assert not Job.objects.exists()

    assert admin_api.post("/registries/entityTypes", {"value": "ticket"}).status_code == 201

    assert triage.post("/jobs/validate", TICKET_JOB).json()["valid"] is True
    created = triage.post("/jobs", TICKET_JOB)
    assert created.status_code == 201, created.content
    leased = triage.post(f"/jobs/{created.json()['jobId']}/lease")
    assert leased.status_code == 200, leased.content
    assert leased.json()["status"] == "running"


@pytest.mark.django_db
def test_an_unknown_intent_is_422_before_the_manifest_is_asked(vlevel_api):
    with nothing_written():
        response = vlevel_api.post("/jobs", {**TICKET_JOB, "scope": {"entityType": "page"}})

    assert response.status_code == 422
    [intent] = errors_at(response, "intent")
    assert intent["type"] == "registry_unknown"
    assert "POST /api/v1/registries/intents" in intent["msg"]


@pytest.mark.django_db
def test_values_are_read_in_any_case_as_before(vlevel_api):
    response = vlevel_api.post(
        "/jobs",
        {
            "intent": "SEO_AUDIT",
            "scope": {"entityType": "Page"},
            "payload": {"urls": ["https://shop.test/"]},
            "context": {"source": "manual"},
        },
    )

    assert response.status_code == 201, response.content
    assert Job.objects.get().intent == "seo_audit"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("field", "value"),
    [("intent", "x" * 10_000), ("intent", "two words"), ("intent", 7), ("intent", "")],
    ids=["10k", "space", "int", "empty"],
)
def test_a_value_of_the_wrong_shape_is_422_at_its_field(vlevel_api, field, value):
    with nothing_written():
        response = vlevel_api.post("/jobs", {**TICKET_JOB, "scope": {"entityType": "page"}, field: value})

    assert response.status_code == 422
    assert errors_at(response, field)


@pytest.mark.django_db
def test_a_learning_in_an_unknown_domain_is_refused_then_accepted_once_added(agent, agent_api, admin_api):
    writes_into(agent, "support")
    with nothing_written():
        refused = agent_api.post("/memory/learnings", {**LEARNING, "domain": "support"})

    assert refused.status_code == 422
    [domain] = errors_at(refused, "domain")
    assert "not in the domains registry" in domain["msg"]

    admin_api.post("/registries/domains", {"value": "support"})

    assert agent_api.post("/memory/learnings", {**LEARNING, "domain": "support"}).status_code == 201


@pytest.mark.django_db
def test_a_learning_domain_is_stored_lowercase(agent, agent_api):
    writes_into(agent, "seo")
    created = agent_api.post("/memory/learnings", {**LEARNING, "domain": "SEO"})

    assert created.status_code == 201
    assert Learning.objects.get(pk=created.json()["id"]).domain == "seo"


@pytest.mark.django_db
def test_the_service_checks_a_learnings_domain_too():
    from governance.kernel.exceptions import InvalidInput
    from memory.learnings import create_learning

    with pytest.raises(InvalidInput) as refused:
        create_learning(actor=SYSTEM, story="S", gate=1, domain="support", project="p", tags=[], text="t")

    assert refused.value.errors[0]["loc"] == ["body", "domain"]


# Retired values ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_retired_intent_keeps_its_jobs_and_refuses_new_ones(vlevel, vlevel_api, admin_api):
    job = submit_job(vlevel, {"urls": ["https://shop.test/"]})
    admin_api.post("/registries/intents/seo_audit/retire")

    assert vlevel_api.get(f"/jobs/{job.job_id}").json()["intent"] == "seo_audit"
    assert vlevel_api.post(f"/jobs/{job.job_id}/lease").status_code == 200  # work already admitted goes on
    refused = vlevel_api.post("/jobs", {**AUDIT, "payload": {"urls": ["https://x.test/"]}})
    assert refused.status_code == 422
    [intent] = errors_at(refused, "intent")
    assert intent["type"] == "registry_retired"
    assert "retired" in intent["msg"]
    assert "intents registry" in intent["msg"]
    assert Job.objects.count() == 1


@pytest.mark.django_db
def test_a_replayed_submission_of_a_retired_intent_is_still_the_first_job(vlevel, vlevel_api):
    first = vlevel_api.post("/jobs", AUDIT)
    registries.retire_value(Registry.INTENTS, "seo_audit", actor=SYSTEM)

    again = vlevel_api.post("/jobs", AUDIT)

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["jobId"] == first.json()["jobId"]


@pytest.mark.django_db
def test_an_agent_in_a_retired_domain_stays_readable_and_a_new_version_is_refused(vlevel, vlevel_api, admin_api):
    from tests.support.manifests import manifest_text

    registries.retire_value(Registry.DOMAINS, "seo", actor=SYSTEM)

    assert vlevel_api.get("/agents/agent.seo.vlevel").json()["domain"] == "seo"
    assert vlevel_api.get("/agents/agent.seo.vlevel/manifest").status_code == 200
    assert admin_api.get("/agents").status_code == 200
    same = admin_api.put("/agents/agent.seo.vlevel/manifest", raw=manifest_text("agent.seo.vlevel"), content_type=YAML)
    assert same.status_code == 200  # re-sending the active version is still a no-op
    bumped = admin_api.put(
        "/agents/agent.seo.vlevel/manifest", raw=manifest_text("agent.seo.vlevel", version="1.1.0"), content_type=YAML
    )
    assert bumped.status_code == 422
    [domain] = errors_at(bumped, "domain")
    assert domain["type"] == "registry_retired"


@pytest.mark.django_db
def test_a_learning_in_a_retired_domain_stays_readable_and_new_ones_are_refused(agent, agent_api, viewer_api):
    writes_into(agent, "cart")
    created = agent_api.post("/memory/learnings", {**LEARNING, "domain": "cart"}).json()
    registries.retire_value(Registry.DOMAINS, "cart", actor=SYSTEM)

    assert viewer_api.get(f"/memory/learnings/{created['id']}").json()["domain"] == "cart"
    refused = agent_api.post("/memory/learnings", {**LEARNING, "domain": "cart"})
    assert refused.status_code == 422
    assert errors_at(refused, "domain")[0]["type"] == "registry_retired"


def add_trigger(agent: Agent, **fields) -> JobTrigger:
    trigger = JobTrigger(
        name="orders",
        agent=agent,
        kind="webhook",
        intent="seo_audit",
        entity_type="page",
        payload={"urls": ["https://shop.test/"]},
    )
    for field, value in fields.items():
        setattr(trigger, field, value)
    return triggers.save_trigger(trigger, actor=SYSTEM, changed=[])


@pytest.mark.django_db
def test_a_trigger_is_saved_only_with_registered_values(vlevel):
    with pytest.raises(ValidationError) as refused:
        add_trigger(vlevel, intent="summarize_ticket", entity_type="ticket")

    assert "not in the intents registry" in refused.value.message_dict["intent"][0]
    assert "not in the entityTypes registry" in refused.value.message_dict["entity_type"][0]
    assert not JobTrigger.objects.exists()


@pytest.mark.django_db
def test_a_trigger_with_a_retired_intent_stays_editable_and_a_new_one_is_refused(vlevel):
    trigger = add_trigger(vlevel)
    registries.retire_value(Registry.INTENTS, "seo_audit", actor=SYSTEM)

    trigger.description = "orders from the shop"
    triggers.save_trigger(trigger, actor=SYSTEM, changed=["description"])

    with pytest.raises(ValidationError) as refused:
        add_trigger(vlevel, name="orders-2")
    assert "retired" in refused.value.message_dict["intent"][0]
    assert list(JobTrigger.objects.values_list("name", "intent")) == [("orders", "seo_audit")]


@pytest.mark.django_db
def test_checking_a_manifest_costs_one_query_for_all_its_values(vlevel, django_assert_num_queries):
    from agents.registries import Use, check

    uses = [
        Use(Registry.ROLES, "executor", ("body", "role")),
        Use(Registry.DOMAINS, "seo", ("body", "domain")),
        *(Use(Registry.INTENTS, value, ("body", "intents", i)) for i, value in enumerate(["seo_audit", "rag_reindex"])),
    ]

    with django_assert_num_queries(1):
        check(uses)


@pytest.mark.django_db
def test_an_escalation_whose_intent_was_retired_since_goes_to_the_reviewers_not_to_a_new_job(vlevel_api, architect):
    from tests.agents.test_job_lifecycle import result
    from tests.agents.test_jobs import envelope

    job = vlevel_api.post("/jobs", envelope()).json()
    registries.retire_value(Registry.INTENTS, "seo_audit", actor=SYSTEM)

    body = vlevel_api.post(f"/jobs/{job['jobId']}/result", result(confidence=0.4)).json()

    steps = body["escalation"]["steps"]
    assert [step["action"] for step in steps] == ["opened", "target_refused", "routed_to_human"]
    assert "retired in the intents registry" in steps[1]["reasons"][0]
    assert body["escalation"]["reviewItemId"] is not None
    assert Job.objects.count() == 1
