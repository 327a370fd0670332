"""Every write names its actor: what an agent did is recorded as that agent, never as `system`."""

from __future__ import annotations

import pytest

from governance.kernel.models import AuditEvent
from memory.models import LearningInjection

AGENT = "agent:agent.seo.vlevel"
LEARNING = {"story": "PD-1", "gate": 3, "domain": "seo", "project": "shop", "tags": ["#canonical"], "text": "x"}


def audited(action: str) -> list[str]:
    return list(AuditEvent.objects.filter(action=action).values_list("actor", flat=True))


@pytest.mark.django_db
def test_an_agent_started_chat_is_recorded_as_the_agent(vlevel_api):
    assert vlevel_api.post("/sessions", {"type": "CHAT", "name": "mine"}).status_code == 201
    assert audited("session.started") == [AGENT]


@pytest.mark.django_db
def test_learnings_and_gate_results_name_their_author(vlevel_api):
    work = {"type": "CHAT", "name": "PD-1", "story": "PD-1", "domain": "seo", "project": "shop"}
    assert vlevel_api.post("/sessions", work).status_code == 201  # a gate result needs work on its story
    assert vlevel_api.post("/memory/learnings", LEARNING).status_code == 201
    assert vlevel_api.post("/memory/gate-results", {"story": "PD-1", "gate": 8, "verdict": "GO"}).status_code == 201

    assert audited("learning.created") == [AGENT]
    assert audited("gate_result.recorded") == [AGENT]


@pytest.mark.django_db
def test_an_injection_records_who_was_served(vlevel):
    from governance.kernel.principals import Principal
    from memory.injection import build_block
    from tests.memory.test_injection import HASHING, learning

    learning("retry the flaky deploy with backoff", domain="seo")  # vlevel's own domain

    build_block(
        actor=Principal(agent=vlevel),
        story="PD-2",
        domain="tooling",
        project="gov",
        query_text="flaky deploy",
        backend=HASHING,
    )

    assert list(LearningInjection.objects.values_list("served_to", flat=True)) == [AGENT]


@pytest.mark.django_db
def test_a_tool_approval_request_names_the_agent(vlevel_api):
    url = "/agents/agent.seo.vlevel/tools/mcp__chrome-devtools__take_snapshot/calls"
    assert vlevel_api.post(url, {"arguments": {"url": "https://shop.example.com/"}}).status_code == 202
    assert audited("tool.approval_requested") == [AGENT]
    assert audited("review.opened") == [AGENT]


@pytest.mark.django_db
def test_each_step_of_a_job_is_recorded_as_its_agent(vlevel_api):
    from tests.agents.test_job_lifecycle import result
    from tests.agents.test_jobs import envelope

    job_id = vlevel_api.post("/jobs", envelope()).json()["jobId"]
    vlevel_api.post(f"/jobs/{job_id}/lease")
    vlevel_api.post(f"/jobs/{job_id}/state", {"currentNode": "crawl"})
    vlevel_api.post(f"/jobs/{job_id}/result", result())

    steps = AuditEvent.objects.filter(target_id=job_id).order_by("pk")
    assert [(e.action, e.actor) for e in steps] == [
        ("job.submitted", AGENT),
        ("job.leased", AGENT),
        ("job.state_updated", AGENT),
        ("job.result_submitted", AGENT),
    ]


@pytest.mark.django_db
def test_the_job_service_refuses_another_agent_whatever_the_edge(vlevel_api, other_agent):
    from agents.jobs import leases
    from agents.models import Job
    from governance.kernel.exceptions import Forbidden
    from governance.kernel.principals import Principal
    from tests.agents.test_jobs import envelope

    job = Job.objects.get(pk=vlevel_api.post("/jobs", envelope()).json()["jobId"])

    with pytest.raises(Forbidden):
        leases.claim_lease(job, actor=Principal(agent=other_agent), owner="thief")
