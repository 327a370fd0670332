"""The skill registry: a manifest's required skills exist, are enabled and are granted their tools;
operators manage skills in the admin or from YAML; the agent page shows them."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from agents.manifest import read_text
from agents.models import AgentManifest, Skill
from agents.skills import SkillSpec, import_skills, save_skill
from governance.kernel.exceptions import Forbidden
from governance.kernel.models import AuditEvent
from governance.kernel.principals import Principal
from tests.factories.governance import UserFactory
from tests.support.manifests import load, manifest_text

URL = "/agents/agent.seo.vlevel/manifest"


@pytest.fixture
def seed() -> dict:
    return read_text(manifest_text("agent.seo.vlevel"))


def refused_at(response, index: int) -> str:
    """The message of the 422 entry at skills[index].skill_id (nothing else is refused)."""
    assert response.status_code == 422, response.content
    errors = response.json()["errors"]
    assert [e["loc"] for e in errors] == [["body", "skills", index, "skill_id"]]
    return errors[0]["msg"]


@pytest.mark.django_db
def test_the_shipped_catalog_is_in_the_registry_on_every_install():
    assert dict(Skill.objects.values_list("skill_id", "version")) == {
        "canonical_check": "1.0.0",
        "chunker": "1.0.0",
        "seo_role_audit": "1.0.0",
        "vlevel_calculator": "1.0.0",
    }
    assert Skill.objects.get(skill_id="canonical_check").tools == ["mcp__chrome-devtools__take_snapshot"]


@pytest.mark.django_db
def test_a_required_skill_the_registry_lacks_refuses_the_manifest_and_writes_nothing(admin_api, seed):
    seed["skills"].append({"skill_id": "serp_scraper", "required": True})

    response = admin_api.put(URL, seed)

    assert "no skill 'serp_scraper'" in refused_at(response, 3)
    assert not AgentManifest.objects.exists()


@pytest.mark.django_db
def test_a_required_skill_whose_tool_is_not_granted_is_refused_naming_the_tool(admin_api, seed):
    seed["tools"] = [tool for tool in seed["tools"] if tool["tool_id"] != "mcp__chrome-devtools__take_snapshot"]

    message = refused_at(admin_api.put(URL, seed), 1)

    assert "canonical_check" in message
    assert "mcp__chrome-devtools__take_snapshot" in message


@pytest.mark.django_db
def test_a_disabled_skill_refuses_the_manifests_that_require_it(admin_api, seed):
    Skill.objects.filter(skill_id="vlevel_calculator").update(enabled=False)

    assert "disabled" in refused_at(admin_api.put(URL, seed), 2)


@pytest.mark.django_db
def test_an_optional_skill_the_registry_lacks_loads_with_a_warning(admin_api, seed):
    seed["skills"].append({"skill_id": "serp_scraper", "required": False})

    response = admin_api.put(URL, seed)

    assert response.status_code == 201
    warnings = response.json()["warnings"]
    assert {"loc": ["body", "skills", 3, "skill_id"], "type": "optional_skill"}.items() <= warnings[-1].items()


CATALOG = """
skills:
  - skill_id: serp_scraper
    version: "1.0.0"
    description: Reads a results page.
    tools: [mcp__chrome-devtools__take_snapshot]
"""


@pytest.mark.django_db
def test_import_skills_creates_then_is_a_no_op_then_needs_a_higher_version(tmp_path):
    path = tmp_path / "skills.yaml"
    path.write_text(CATALOG, encoding="utf-8")
    out = StringIO()

    call_command("import_skills", str(path), stdout=out)
    call_command("import_skills", str(path), stdout=out)

    assert "[skills] 1 created, 0 updated, 0 unchanged" in out.getvalue()
    assert "[skills] 0 created, 0 updated, 1 unchanged" in out.getvalue()
    path.write_text(CATALOG.replace("Reads a results page.", "Reads two pages."), encoding="utf-8")
    with pytest.raises(CommandError, match="bump the version"):
        call_command("import_skills", str(path))
    path.write_text(
        CATALOG.replace('"1.0.0"', '"1.1.0"').replace("Reads a results page.", "Reads two."), encoding="utf-8"
    )
    call_command("import_skills", str(path), stdout=out)
    skill = Skill.objects.get(skill_id="serp_scraper")
    assert (skill.version, skill.description) == ("1.1.0", "Reads two.")
    assert list(
        AuditEvent.objects.filter(target_type="agents.skill", target_id=str(skill.pk))
        .order_by("pk")
        .values_list("action", "actor")
    ) == [
        ("skill.created", "system"),
        ("skill.updated", "system"),
    ]


@pytest.mark.django_db
def test_a_refused_skill_imports_none_of_the_catalog(tmp_path):
    path = tmp_path / "skills.yaml"
    path.write_text(CATALOG + '  - skill_id: chunker\n    version: "0.9.0"\n', encoding="utf-8")

    with pytest.raises(CommandError, match="versions only go up"):
        call_command("import_skills", str(path))

    assert not Skill.objects.filter(skill_id="serp_scraper").exists()


@pytest.mark.django_db
def test_a_malformed_catalog_names_the_field(tmp_path):
    path = tmp_path / "skills.yaml"
    path.write_text('skills:\n  - skill_id: "bad id"\n    version: "1"\n', encoding="utf-8")

    with pytest.raises(CommandError) as refused:
        call_command("import_skills", str(path))

    assert "skills.0.skill_id" in str(refused.value)
    assert "skills.0.version" in str(refused.value)


@pytest.mark.django_db
@pytest.mark.parametrize("roles", [["Viewer"], ["Reviewer"]])
def test_only_operators_with_the_permission_change_skills(roles):
    user = UserFactory(username="mallory", roles=roles)
    spec = SkillSpec(skill_id="serp_scraper", version="1.0.0")

    with pytest.raises(Forbidden):
        save_skill(spec, actor=Principal(user=user))
    with pytest.raises(Forbidden):
        import_skills(CATALOG, actor=Principal(user=user))

    assert not Skill.objects.filter(skill_id="serp_scraper").exists()


@pytest.mark.django_db
def test_an_admin_edits_a_skill_in_the_admin_through_the_registry_rules(client):
    admin = UserFactory(username="alice", roles=["Admin"])
    admin.is_staff = True
    admin.save()
    client.force_login(admin)
    skill = Skill.objects.get(skill_id="chunker")
    url = reverse("admin:agents_skill_change", args=[skill.pk])
    form = {"version": "1.0.0", "description": "Other words.", "tools": "mcp__vector__upsert", "enabled": "on"}

    same_version = client.post(url, form)
    assert same_version.status_code == 200
    assert "bump the version" in same_version.content.decode()

    response = client.post(url, {**form, "version": "1.1.0", "tools": "mcp__vector__upsert\nmcp__vector__query"})

    assert response.status_code == 302
    skill.refresh_from_db()
    assert (skill.version, skill.tools) == ("1.1.0", ["mcp__vector__upsert", "mcp__vector__query"])
    event = AuditEvent.objects.get(action="skill.updated")
    assert (event.actor, event.data["previous"], event.data["version"]) == ("user:alice", "1.0.0", "1.1.0")
    assert client.post(reverse("admin:agents_skill_delete", args=[skill.pk])).status_code == 403


@pytest.mark.django_db
def test_the_agent_page_shows_its_skills_and_what_the_registry_says(client):
    load("agent.seo.vlevel")
    Skill.objects.filter(skill_id="canonical_check").update(enabled=False)
    client.force_login(UserFactory(username="victor", roles=["Viewer"]))

    page = client.get(reverse("agents:agent-detail", args=["agent.seo.vlevel"])).content.decode()

    section = page[page.index("<h2>Skills</h2>") : page.index("<h2>KPIs</h2>")]
    assert section.count("<tr>") == 4  # the header and the three skills
    assert "Renders a page and compares its canonical link" in section
    assert "mcp__supabase__execute_sql" in section
    assert section.count("ready") == 2
    assert section.count("disabled") == 1


@pytest.mark.django_db
def test_the_agent_page_describes_its_inputs_and_outputs(client):
    load("agent.seo.vlevel")
    client.force_login(UserFactory(username="victor", roles=["Viewer"]))

    page = client.get(reverse("agents:agent-detail", args=["agent.seo.vlevel"])).content.decode()

    section = page[page.index("<h2>Inputs and outputs</h2>") : page.index("<h2>Skills</h2>")]
    assert "URLs to analyze for V-level scoring" in section
    assert "Improvement recommendations" in section
    assert section.count("<tr>") == 5  # the header, two inputs, two outputs
