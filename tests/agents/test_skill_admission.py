"""Required skills are checked at every admission, not only when a manifest loads (issue 34, point 4): a skill
that changed after the manifest was loaded, so that it now needs a tool the manifest does not grant, or was
disabled, stops the agent's new jobs on every path (REST, validate, MCP submit_job goes through the same
``admit``), with a 403 that names the skill and the tool, and nothing written; once the skill is usable again,
jobs are admitted."""

from __future__ import annotations

import pytest

from agents.models import Job, Skill
from agents.skills import SkillSpec, save_skill
from governance.kernel.principals import SYSTEM
from tests.agents.test_jobs import envelope
from tests.support.refusals import last_audit_id, nothing_written, refusals_since

NEW_TOOL = "mcp__serp__scrape"


def needs(skill_id: str, tools: list[str], version: str) -> None:
    current = Skill.objects.get(skill_id=skill_id)
    save_skill(
        SkillSpec(skill_id=skill_id, version=version, description=current.description, tools=tools), actor=SYSTEM
    )


@pytest.mark.django_db
def test_a_skill_that_now_needs_an_ungranted_tool_stops_new_jobs_and_writes_nothing(vlevel_api):
    needs("vlevel_calculator", [NEW_TOOL], "1.1.0")
    before = last_audit_id()

    with nothing_written():
        submitted = vlevel_api.post("/jobs", envelope())
        validated = vlevel_api.post("/jobs/validate", envelope())

    for response in (submitted, validated):
        assert response.status_code == 403, response.content
        detail = response.json()["detail"]
        assert "vlevel_calculator" in detail
        assert NEW_TOOL in detail
    assert not Job.objects.exists()
    assert len(refusals_since(before)) == 2


@pytest.mark.django_db
def test_a_disabled_required_skill_stops_new_jobs(vlevel_api):
    Skill.objects.filter(skill_id="canonical_check").update(enabled=False)

    response = vlevel_api.post("/jobs", envelope())

    assert response.status_code == 403
    assert "canonical_check" in response.json()["detail"]
    assert "disabled" in response.json()["detail"]


@pytest.mark.django_db
def test_jobs_are_admitted_again_once_the_skill_is_usable(vlevel_api):
    needs("vlevel_calculator", [NEW_TOOL], "1.1.0")
    assert vlevel_api.post("/jobs", envelope()).status_code == 403

    needs("vlevel_calculator", [], "1.2.0")

    assert vlevel_api.post("/jobs", envelope()).status_code == 201
