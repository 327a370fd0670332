"""Escalations: triggers fire on results, route to the target agent or a human, are handled,
re-escalated once when late, then expired, every step recorded."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from agents.models import Escalation, Job
from agents.tasks import escalation_timeouts
from governance.kernel.models import AuditEvent
from governance.reviews.models import ReviewItem
from tests.agents.test_job_lifecycle import result
from tests.agents.test_jobs import envelope
from tests.support.api import Api
from tests.support.keys import issue_key
from tests.support.manifests import load


@pytest.fixture
def job(vlevel_api, architect) -> dict:
    return vlevel_api.post("/jobs", envelope()).json()


def _late(escalation: Escalation) -> None:
    Escalation.objects.filter(pk=escalation.pk).update(deadline=timezone.now() - timedelta(minutes=1))


@pytest.mark.django_db
def test_low_confidence_escalates_to_the_target_agent_with_a_linked_job(vlevel_api, job, architect):
    body = vlevel_api.post(f"/jobs/{job['jobId']}/result", result(confidence=0.4)).json()

    escalation = body["escalation"]
    assert escalation["triggers"] == ["confidence < 0.7"]
    assert escalation["targetAgent"] == "agent.seo.architect"
    child = Job.objects.get(pk=escalation["childJobId"])
    assert child.agent == architect
    assert str(child.parent_id) == job["jobId"]
    assert child.payload["escalation"]["fromAgent"] == "agent.seo.vlevel"
    assert child.context["source"] == "event"
    assert [s["action"] for s in escalation["steps"]] == ["opened", "routed_to_agent"]
    architect_view = Api(vlevel_api.client, issue_key(agent=architect)).get(f"/jobs/{child.pk}").json()
    assert architect_view["parentJobId"] == job["jobId"]


@pytest.mark.django_db
def test_several_triggers_fire_into_one_escalation(vlevel_api, job):
    body = vlevel_api.post(f"/jobs/{job['jobId']}/result", result(confidence=0.1, error_count=7)).json()
    assert body["escalation"]["triggers"] == ["confidence < 0.7", "error_count > 3"]
    assert Escalation.objects.count() == 1


@pytest.mark.django_db
def test_a_trigger_on_an_unreported_value_does_not_fire(vlevel_api, job):
    body = vlevel_api.post(f"/jobs/{job['jobId']}/result", result(confidence=None, error_count=None)).json()
    assert body["escalation"] is None


@pytest.mark.django_db
def test_the_agent_may_ask_to_escalate(vlevel_api, job):
    body = vlevel_api.post(f"/jobs/{job['jobId']}/result", result(nextAction="escalate")).json()
    assert body["escalation"]["triggers"] == ["nextAction == 'escalate'"]


@pytest.mark.django_db
def test_the_escalation_is_handled_when_the_target_agent_finishes(vlevel_api, job, architect):
    child_id = vlevel_api.post(f"/jobs/{job['jobId']}/result", result(confidence=0.4)).json()["escalation"][
        "childJobId"
    ]
    architect_api = Api(vlevel_api.client, issue_key(agent=architect))

    architect_api.post(f"/jobs/{child_id}/result", {"success": True, "data": {"decision": "keep V2"}})

    escalation = Escalation.objects.get()
    assert escalation.status == "handled"
    assert escalation.steps[-1]["by"] == "agent:agent.seo.architect"
    assert vlevel_api.get(f"/jobs/{job['jobId']}").json()["escalations"][0]["status"] == "handled"


@pytest.mark.django_db
def test_without_a_usable_target_the_escalation_goes_to_the_reviewers(vlevel_api, vlevel):
    job = vlevel_api.post("/jobs", envelope()).json()  # agent.seo.architect is not registered

    body = vlevel_api.post(f"/jobs/{job['jobId']}/result", result(confidence=0.2)).json()

    assert body["escalation"]["reviewItemId"] is not None
    assert [s["action"] for s in body["escalation"]["steps"]] == ["opened", "target_unavailable", "routed_to_human"]
    item = ReviewItem.objects.get()
    assert item.kind == "escalation"
    assert item.status == "pending"


@pytest.mark.django_db
def test_human_required_goes_to_the_inbox_and_a_reviewer_decision_handles_it(client, reviewer):
    architect = load("agent.seo.architect")
    api = Api(client, issue_key(agent=architect))
    job = api.post("/jobs", envelope(payload={"escalation": {"triggers": ["t"]}})).json()

    body = api.post(
        f"/jobs/{job['jobId']}/result", {"success": True, "data": {"decision": "?"}, "human_required": True}
    ).json()

    item_id = body["escalation"]["reviewItemId"]
    assert body["escalation"]["humanRequired"] is True
    reviewer_api = Api(client, issue_key(user=reviewer))
    decided = reviewer_api.post(f"/reviews/{item_id}/decision", {"decision": "approve", "comment": "fine"})
    assert decided.status_code == 200
    escalation = Escalation.objects.get()
    assert escalation.status == "handled"
    assert escalation.steps[-1] == {
        **escalation.steps[-1],
        "action": "handled",
        "by": "user:rita",
        "decision": "approve",
    }


@pytest.mark.django_db
def test_a_late_escalation_is_escalated_again_then_expires(vlevel_api, job):
    vlevel_api.post(f"/jobs/{job['jobId']}/result", result(confidence=0.4))
    escalation = Escalation.objects.get()

    _late(escalation)
    assert escalation_timeouts() == {"reescalated": 1, "expired": 0, "errors": 0}
    escalation.refresh_from_db()
    assert escalation.status == "reescalated"
    assert escalation.review_item.status == "pending"  # now a human looks at it too
    assert escalation.deadline > timezone.now() + timedelta(hours=23)

    assert escalation_timeouts() == {
        "reescalated": 0,
        "expired": 0,
        "errors": 0,
    }  # not late again yet

    _late(escalation)
    assert escalation_timeouts() == {"reescalated": 0, "expired": 1, "errors": 0}
    escalation.refresh_from_db()
    assert escalation.status == "expired"
    assert escalation.review_item.status == "expired"
    assert escalation.review_item.decision.decided_by == "system"
    assert [s["action"] for s in escalation.steps] == [
        "opened",
        "routed_to_agent",
        "reescalated",
        "routed_to_human",
        "expired",
    ]
    assert AuditEvent.objects.filter(target_type="agents.escalation", action="escalation.expired").count() == 1


@pytest.mark.django_db
def test_a_handled_escalation_never_times_out(vlevel_api, job, architect):
    child_id = vlevel_api.post(f"/jobs/{job['jobId']}/result", result(confidence=0.4)).json()["escalation"][
        "childJobId"
    ]
    Api(vlevel_api.client, issue_key(agent=architect)).post(
        f"/jobs/{child_id}/result", {"success": True, "data": {"decision": "x"}}
    )
    _late(Escalation.objects.get())

    assert escalation_timeouts() == {"reescalated": 0, "expired": 0, "errors": 0}


@pytest.mark.django_db
def test_the_timeout_task_is_scheduled_in_the_database():
    task = PeriodicTask.objects.get(task="agents.escalation_timeouts")
    assert task.enabled
    assert task.interval.every == 300


def _architect_with(admin_api, **changes) -> None:
    from agents.manifest import read_text
    from tests.support.manifests import manifest_text

    document = read_text(manifest_text("agent.seo.architect"))
    document.update(version="1.3.0", **changes)
    assert admin_api.put("/agents/agent.seo.architect/manifest", document).status_code == 201


@pytest.mark.django_db
def test_an_escalation_the_targets_contract_refuses_goes_to_a_human_and_makes_no_job(
    vlevel_api, job, architect, admin_api
):
    """Platform-made work passes the door an agent's does (issue 34 point 4): the target's manifest takes only
    rag_reindex jobs, so the escalated seo_audit job is not created behind its back; a reviewer gets it."""
    _architect_with(admin_api, intents=["rag_reindex"])

    body = vlevel_api.post(f"/jobs/{job['jobId']}/result", result(confidence=0.4)).json()

    escalation = body["escalation"]
    assert escalation["childJobId"] is None
    assert escalation["reviewItemId"] is not None
    steps = escalation["steps"]
    assert [s["action"] for s in steps] == ["opened", "target_refused", "routed_to_human"]
    assert "seo_audit" in " ".join(steps[1]["reasons"])
    assert not Job.objects.filter(agent=architect).exists()


@pytest.mark.django_db
def test_an_escalation_whose_payload_fails_the_targets_preconditions_goes_to_a_human(
    vlevel_api, job, architect, admin_api
):
    _architect_with(
        admin_api,
        validation={
            "pre_conditions": [{"expression": "escalation.triggers.length > 5", "error_code": "TOO_FEW_TRIGGERS"}],
            "post_conditions": [],
            "invariants": [],
        },
    )

    escalation = vlevel_api.post(f"/jobs/{job['jobId']}/result", result(confidence=0.4)).json()["escalation"]

    assert [s["action"] for s in escalation["steps"]] == ["opened", "target_refused", "routed_to_human"]
    assert "TOO_FEW_TRIGGERS" in " ".join(escalation["steps"][1]["reasons"])
    assert not Job.objects.filter(agent=architect).exists()
