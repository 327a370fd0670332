"""Named schemas resolve (issue 34.4): a name a manifest's types use resolves in its own `schemas:`,
else in the registry of named schemas operators manage; one that resolves nowhere is a 422 at load,
and every input and output is checked through the definition the stored version resolved."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents import named_schemas
from agents.models import Agent, AgentManifest, Job, NamedSchema
from agents.registry import load_manifest
from governance.kernel.exceptions import Forbidden, InvalidInput
from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM, Principal
from tests.agents.test_jobs import envelope
from tests.agents.test_manifest_types import finish
from tests.support.api import Api
from tests.support.keys import issue_key
from tests.support.manifests import manifest_text

URL = "/agents/agent.seo.vlevel/manifest"
GOOD_SCORES = [{"url": "https://example.com/a", "level": "V2"}, {"url": "https://example.com/b", "level": "V5"}]


def output_checks(body: dict) -> dict[str, dict]:
    return {r["output"]: r for r in body["postConditions"] if r.get("error_code") == "OUTPUT_TYPE"}


def put_yaml(api: Api, text: str):
    return api.put(URL, raw=text, content_type="application/yaml")


# The seed example ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_seed_example_loads_unchanged_and_its_good_scores_pass(vlevel_api):
    job = vlevel_api.post("/jobs", envelope()).json()

    body = finish(vlevel_api, job["jobId"], {"scores": GOOD_SCORES, "recommendations": ["Add a canonical link"]})

    assert body["status"] == "succeeded"
    assert {name: r["passed"] for name, r in output_checks(body).items()} == {"scores": True, "recommendations": True}


@pytest.mark.django_db
def test_a_score_of_v9_or_without_its_url_is_reported_and_the_job_does_not_succeed(vlevel_api):
    job = vlevel_api.post("/jobs", envelope()).json()
    Job.objects.filter(pk=job["jobId"]).update(attempts=2)  # finish() takes the last attempt
    scores = [{"url": "https://example.com/a", "level": "V9"}, {"level": "V1"}]

    body = finish(vlevel_api, job["jobId"], {"scores": scores, "recommendations": []})

    assert body["status"] == "failed"
    scores_check = output_checks(body)["scores"]
    assert scores_check["passed"] is False
    assert [(v["loc"], v["type"]) for v in scores_check["violations"]] == [
        (["data", "scores", 0, "level"], "enum"),
        (["data", "scores", 1, "url"], "missing"),
    ]


# Names that resolve nowhere -------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_undefined_name_is_a_422_at_its_path_and_nothing_is_written(admin_api):
    text = manifest_text("agent.seo.vlevel").replace("z.array(VLevelScoreSchema)", "z.array(VLevelScoreSchemaa)")
    audit_rows = AuditEvent.objects.count()

    response = put_yaml(admin_api, text)

    assert response.status_code == 422
    (error,) = response.json()["errors"]
    assert (error["loc"], error["type"]) == (["body", "outputs", 0, "type"], "undefined_schema")
    assert "VLevelScoreSchemaa" in error["msg"]
    assert not Agent.objects.exists()
    assert not AgentManifest.objects.exists()
    assert AuditEvent.objects.count() == audit_rows


@pytest.mark.django_db
def test_a_retired_registry_schema_no_longer_resolves_for_new_loads_and_stored_versions_keep_it(admin_api):
    assert put_yaml(admin_api, manifest_text("agent.seo.vlevel")).status_code == 201
    named_schemas.retire_schema("RecommendationSchema", actor=SYSTEM)

    response = put_yaml(admin_api, manifest_text("agent.seo.vlevel", version="1.0.1"))

    assert response.status_code == 422
    assert [e["loc"] for e in response.json()["errors"]] == [["body", "outputs", 1, "type"]]
    assert list(AgentManifest.objects.values_list("version", flat=True)) == ["1.0.0"]
    assert "RecommendationSchema" in AgentManifest.objects.get().registry_schemas
    assert put_yaml(admin_api, manifest_text("agent.seo.vlevel")).status_code == 200  # the active one, re-sent


@pytest.mark.django_db
def test_a_registry_edit_does_not_change_the_checks_of_a_version_already_stored(client, admin_api):
    assert put_yaml(admin_api, manifest_text("agent.seo.vlevel")).status_code == 201
    api = Api(client, issue_key(agent=Agent.objects.get()))
    strict = {"url": "z.string().url()", "level": "z.enum(['V1', 'V2', 'V3', 'V4', 'V5'])", "confidence": "z.number()"}
    named_schemas.save_schema("VLevelScoreSchema", strict, actor=SYSTEM)

    job = api.post("/jobs", envelope()).json()
    body = finish(api, job["jobId"], {"scores": GOOD_SCORES, "recommendations": []})

    assert body["status"] == "succeeded"  # 1.0.0 keeps the definition it was stored with
    assert put_yaml(admin_api, manifest_text("agent.seo.vlevel", version="1.1.0")).status_code == 201
    assert AgentManifest.objects.get(version="1.1.0").registry_schemas["VLevelScoreSchema"] == strict
    job = api.post("/jobs", envelope(payload={"urls": [s["url"] for s in GOOD_SCORES], "round": 2})).json()
    Job.objects.filter(pk=job["jobId"]).update(attempts=2)
    body = finish(api, job["jobId"], {"scores": GOOD_SCORES, "recommendations": []})
    assert [v["loc"] for v in output_checks(body)["scores"]["violations"]] == [
        ["data", "scores", 0, "confidence"],
        ["data", "scores", 1, "confidence"],
    ]


@pytest.mark.django_db
def test_a_registry_schema_may_use_another_and_the_manifest_snapshots_both(admin_api):
    named_schemas.save_schema("Page", {"url": "z.string().url()"}, actor=SYSTEM)
    named_schemas.save_schema("PageList", "z.array(Page).min(1)", actor=SYSTEM)
    text = manifest_text("agent.seo.vlevel").replace("type: VLevelOptionsSchema", "type: PageList")

    response = put_yaml(admin_api, text)

    assert response.status_code == 201
    assert {"Page", "PageList"} <= set(AgentManifest.objects.get().registry_schemas)


# Managing the registry -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_agent_cannot_manage_named_schemas_and_nothing_is_written(vlevel):
    before = list(NamedSchema.objects.values_list("name", "definition", "retired_at"))
    agent = Principal(agent=vlevel)

    with pytest.raises(Forbidden):
        named_schemas.save_schema("Mine", "z.string()", actor=agent)
    with pytest.raises(Forbidden):
        named_schemas.save_schema("VLevelScoreSchema", "z.unknown()", actor=agent)
    with pytest.raises(Forbidden):
        named_schemas.retire_schema("VLevelScoreSchema", actor=agent)

    assert list(NamedSchema.objects.values_list("name", "definition", "retired_at")) == before
    assert not AuditEvent.objects.filter(action__startswith="schema.").exists()


@pytest.mark.django_db
def test_an_admin_adds_a_schema_through_the_admin_and_the_trail_names_them(client, staff_admin):
    client.force_login(staff_admin)
    form = {"name": "PageSchema", "label": "Page", "description": "", "definition": "url: z.string().url()"}

    response = client.post(reverse("admin:agents_namedschema_add"), form)

    assert response.status_code == 302, response.content.decode()[:2000]
    assert NamedSchema.objects.get(name="PageSchema").definition == {"url": "z.string().url()"}
    event = AuditEvent.objects.get(action="schema.added")
    assert event.actor == "user:alice"


@pytest.mark.django_db
def test_the_admin_refuses_a_definition_that_does_not_parse_or_names_nothing(client, staff_admin):
    client.force_login(staff_admin)
    url = reverse("admin:agents_namedschema_add")

    bad = client.post(url, {"name": "Bad", "label": "Bad", "definition": "z.strin()"})
    dangling = client.post(url, {"name": "Dangling", "label": "D", "definition": "z.array(NoSuchSchema)"})

    assert bad.status_code == dangling.status_code == 200  # the form again, with the error
    assert "not supported" in bad.content.decode()
    assert "NoSuchSchema" in dangling.content.decode()
    assert not NamedSchema.objects.filter(name__in=["Bad", "Dangling"]).exists()


@pytest.mark.django_db
def test_an_operator_without_the_permission_cannot_add_in_the_admin(client, staff_viewer):
    client.force_login(staff_viewer)

    response = client.post(
        reverse("admin:agents_namedschema_add"), {"name": "X", "label": "X", "definition": "z.string()"}
    )

    assert response.status_code == 403
    assert not NamedSchema.objects.filter(name="X").exists()


@pytest.mark.django_db
def test_a_schema_refers_to_itself_through_another_is_refused(db):
    named_schemas.save_schema("A", "z.array(z.string())", actor=SYSTEM)
    named_schemas.save_schema("B", "z.array(A)", actor=SYSTEM)

    with pytest.raises(InvalidInput) as refused:
        named_schemas.save_schema("A", "z.array(B)", actor=SYSTEM)

    assert refused.value.errors[0]["type"] == "schema_cycle"
    assert NamedSchema.objects.get(name="A").definition == "z.array(z.string())"


@pytest.mark.django_db
def test_saving_a_retired_schema_again_reinstates_it_for_new_loads(admin_api):
    named_schemas.retire_schema("RecommendationSchema", actor=SYSTEM)
    entry = NamedSchema.objects.get(name="RecommendationSchema")

    _, outcome = named_schemas.save_schema("RecommendationSchema", entry.definition, actor=SYSTEM)

    assert outcome == "reinstated"
    assert put_yaml(admin_api, manifest_text("agent.seo.vlevel")).status_code == 201
    assert load_manifest(manifest_text("agent.seo.vlevel"), actor=SYSTEM)[1] is False  # no-op re-send
