"""POST /jobs/{id}/escalate (seed 001 AgentContract): the owner agent escalates its own live job
with its own reason, routed as its manifest says; nobody else can, and one at a time."""

from __future__ import annotations

import pytest

from agents.models import Escalation, Job
from governance.kernel.models import AuditEvent
from tests.agents.test_jobs import envelope
from tests.support.api import Api
from tests.support.keys import issue_key

pytestmark = pytest.mark.django_db

REASON = "The page list mixes two sites; I cannot tell which canonical wins.  Please decide."


@pytest.fixture
def job(vlevel_api, architect) -> dict:
    """A job its agent is working on (leased)."""
    submitted = vlevel_api.post("/jobs", envelope(payload={"urls": ["https://e.com/1"]})).json()
    vlevel_api.post(f"/jobs/{submitted['jobId']}/lease", {"owner": "worker-1"})
    return submitted


def test_another_agent_or_an_operator_cannot_escalate_the_job(job, architect, admin_api, client):
    architect_api = Api(client, issue_key(agent=architect))

    by_agent = architect_api.post(f"/jobs/{job['jobId']}/escalate", {"reason": "mine now"})
    by_operator = admin_api.post(f"/jobs/{job['jobId']}/escalate", {"reason": "mine now"})

    assert by_agent.status_code in (403, 404)
    assert by_operator.status_code == 403
    assert not Escalation.objects.exists()


def test_the_owner_escalates_with_its_own_words_routed_as_the_manifest_says(vlevel_api, job):
    answer = vlevel_api.post(f"/jobs/{job['jobId']}/escalate", {"reason": REASON})

    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert body["reason"] == REASON  # word for word
    assert body["targetAgent"] == "agent.seo.architect"
    assert body["childJobId"]
    escalation = Escalation.objects.get()
    assert escalation.triggers == ["agent asked"]
    opened = AuditEvent.objects.get(action="escalation.opened")
    assert opened.actor == "agent:agent.seo.vlevel"
    shown = vlevel_api.get(f"/jobs/{job['jobId']}").json()["escalations"]
    assert [e["reason"] for e in shown] == [REASON]


def test_a_job_not_started_yet_cannot_be_escalated(vlevel_api, architect):
    queued = vlevel_api.post("/jobs", envelope(payload={"urls": ["https://e.com/2"]})).json()

    assert vlevel_api.post(f"/jobs/{queued['jobId']}/escalate", {"reason": "too early"}).status_code == 409


def test_one_open_escalation_at_a_time_and_none_for_a_finished_job(vlevel_api, job):
    vlevel_api.post(f"/jobs/{job['jobId']}/escalate", {"reason": "first"})

    again = vlevel_api.post(f"/jobs/{job['jobId']}/escalate", {"reason": "second"})
    Job.objects.update(status=Job.Status.SUCCEEDED)
    finished = vlevel_api.post(f"/jobs/{job['jobId']}/escalate", {"reason": "third"})

    assert again.status_code == 409
    assert finished.status_code == 409
    assert Escalation.objects.count() == 1


@pytest.mark.parametrize("body", [{}, {"reason": ""}, {"reason": "x" * 2001}])
def test_a_missing_or_oversized_reason_is_refused_with_its_path(vlevel_api, job, body):
    answer = vlevel_api.post(f"/jobs/{job['jobId']}/escalate", body)

    assert answer.status_code == 422
    assert answer.json()["errors"][0]["loc"][-1] in ("reason", "data")
    assert not Escalation.objects.exists()
