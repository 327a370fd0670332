"""PUT/GET /api/v1/agents/{agent_id}/manifest: versions only go up, old ones stay readable."""

from __future__ import annotations

import json
from io import StringIO

import pytest
import yaml
from django.core.management import CommandError, call_command

from agents.manifest import read_text
from agents.models import Agent, AgentManifest
from governance.kernel.models import AuditEvent
from tests.support.api import Api
from tests.support.keys import issue_key
from tests.support.manifests import manifest_text

YAML = "application/yaml"
URL = "/agents/agent.seo.vlevel/manifest"


@pytest.fixture
def seed() -> dict:
    return read_text(manifest_text("agent.seo.vlevel"))


def bumped(seed: dict, version: str, **changes) -> dict:
    return {**seed, "version": version, **changes}


@pytest.mark.django_db
def test_the_seed_yaml_loads_through_the_api(admin_api):
    response = admin_api.put(URL, raw=manifest_text("agent.seo.vlevel"), content_type=YAML)

    assert response.status_code == 201
    body = response.json()
    assert body["id"] == "agent.seo.vlevel"
    assert body["version"] == "1.0.0"
    assert body["role"] == "executor"
    agent = Agent.objects.get(agent_id="agent.seo.vlevel")
    assert agent.active_manifest.version == "1.0.0"
    assert (agent.role, agent.domain, agent.owner) == ("executor", "seo", "seo-team")
    assert response["ETag"] == f'"{agent.active_manifest.content_hash}"'
    assert AuditEvent.objects.filter(action="manifest.activated", actor="user:alice").count() == 1


@pytest.mark.django_db
def test_json_loads_too(admin_api, seed):
    assert admin_api.put(URL, seed).status_code == 201


@pytest.mark.django_db
def test_resending_the_active_version_is_a_no_op(admin_api, seed):
    admin_api.put(URL, seed)
    reordered = json.loads(json.dumps(seed, sort_keys=True))

    response = admin_api.put(URL, reordered)

    assert response.status_code == 200
    assert AgentManifest.objects.count() == 1


@pytest.mark.django_db
def test_same_version_other_content_is_a_conflict(admin_api, seed):
    admin_api.put(URL, seed)

    response = admin_api.put(URL, {**seed, "owner": "someone-else"})

    assert response.status_code == 409
    assert response.json()["version"] == "1.0.0"
    assert Agent.objects.get().owner == "seo-team"


@pytest.mark.django_db
def test_a_higher_version_activates_and_the_old_one_stays_readable(admin_api, agent_api, seed):
    admin_api.put(URL, seed)
    assert admin_api.put(URL, bumped(seed, "1.1.0", owner="platform-team")).status_code == 201

    assert admin_api.get(URL).json()["version"] == "1.1.0"
    old = admin_api.get(URL, {"version": "1.0.0"})
    assert old.status_code == 200
    assert old.json()["owner"] == "seo-team"
    assert old["X-Manifest-Active"] == "false"
    assert Agent.objects.get().owner == "platform-team"


@pytest.mark.django_db
@pytest.mark.parametrize("version", ["0.9.0", "1.0.0-rc.1", "0.99.99"])
def test_a_lower_version_is_refused(admin_api, seed, version):
    admin_api.put(URL, seed)

    response = admin_api.put(URL, bumped(seed, version))

    assert response.status_code == 409
    assert response.json()["active_version"] == "1.0.0"
    assert AgentManifest.objects.count() == 1


@pytest.mark.django_db
def test_reloading_an_old_version_is_refused(admin_api, seed):
    admin_api.put(URL, seed)
    admin_api.put(URL, bumped(seed, "2.0.0"))

    assert admin_api.put(URL, seed).status_code == 409
    assert admin_api.get(URL).json()["version"] == "2.0.0"


@pytest.mark.django_db
def test_an_unknown_version_is_404(admin_api, seed):
    admin_api.put(URL, seed)
    assert admin_api.get(URL, {"version": "9.9.9"}).status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "loc"),
    [
        ({"role": "overlord"}, ["body", "role"]),
        ({"version": "v1"}, ["body", "version"]),
        ({"id": "agent.other"}, ["body", "id"]),
        (
            {"memory": {"long_term": {"enabled": True, "storage": "redis"}}},  # no long-term memory in Redis here
            ["body", "memory", "long_term", "storage"],
        ),
        (
            {"validation": {"pre_conditions": [{"expression": "urls.length >>", "error_code": "X"}]}},
            ["body", "validation", "pre_conditions", 0, "expression"],
        ),
        (
            {"kpis": [{"metric_id": "m", "target": 1, "threshold_warning": 2, "threshold_critical": 0.5}]},
            ["body", "kpis", 0],
        ),
    ],
)
def test_invalid_manifests_are_422_with_the_field_path_and_write_nothing(admin_api, seed, change, loc):
    response = admin_api.put(URL, {**seed, **change})

    assert response.status_code == 422
    assert response["Content-Type"] == "application/problem+json"
    assert loc in [error["loc"] for error in response.json()["errors"]]
    assert not AgentManifest.objects.exists()
    assert not Agent.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("raw", "content_type"),
    [("{not json", "application/json"), ("role: [unclosed", YAML), ("- just\n- a list\n", YAML), ("", YAML)],
)
def test_unreadable_bodies_are_422(admin_api, raw, content_type):
    response = admin_api.put(URL, raw=raw, content_type=content_type)
    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["body"]


@pytest.mark.django_db
def test_agents_and_viewers_cannot_load_manifests(agent_api, viewer_api, seed):
    assert agent_api.put("/agents/agent.seo.vlevel/manifest", seed).status_code == 403
    assert viewer_api.put(URL, seed).status_code == 403
    assert not AgentManifest.objects.exists()


@pytest.mark.django_db
def test_an_agent_reads_its_own_manifest_but_not_another(client, vlevel, architect):
    own = Api(client, issue_key(agent=vlevel))
    assert own.get(URL).json()["id"] == "agent.seo.vlevel"
    assert own.get("/agents/agent.seo.architect/manifest").status_code == 404  # as an unknown agent


@pytest.mark.django_db
def test_an_agent_without_a_manifest_has_none_to_read(agent_api, agent):
    agent.agent_id = "agent.bare"
    agent.save()
    assert agent_api.get("/agents/agent.bare/manifest").status_code == 404


@pytest.mark.django_db
def test_load_manifest_command(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"Agent": {**read_text(manifest_text("agent.seo.vlevel")), "domain": "moon"}}))
    out, err = StringIO(), StringIO()
    good = tmp_path / "vlevel.yaml"
    good.write_text(manifest_text("agent.seo.vlevel"))

    with pytest.raises(CommandError, match="1 of 2"):
        call_command("load_manifest", str(good), str(bad), stdout=out, stderr=err)

    assert "agent.seo.vlevel 1.0.0: activated" in out.getvalue()
    assert "domain:" in err.getvalue()
    assert AgentManifest.objects.count() == 1
    call_command("load_manifest", str(good), stdout=out, stderr=err)
    assert "unchanged" in out.getvalue()


@pytest.mark.django_db
def test_a_manifest_stored_before_a_schema_change_is_still_the_same_content(admin_api, seed):
    """Rows keep the canonical form of their day; re-sending the unchanged file after an upgrade
    that added a field must stay a no-op, not become a conflict."""
    from agents.manifest import content_hash

    admin_api.put(URL, seed)
    row = AgentManifest.objects.get()
    older = {
        **row.document,
        "tools": [{k: v for k, v in t.items() if k != "approval_timeout_hours"} for t in row.document["tools"]],
    }
    AgentManifest.objects.filter(pk=row.pk).update(document=older, content_hash=content_hash(older))

    assert admin_api.put(URL, seed).status_code == 200
    assert admin_api.put(URL, {**seed, "owner": "other"}).status_code == 409
