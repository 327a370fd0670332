"""What the hottest API requests cost the database, statement by statement (issue 18.4).

A job submission, its idempotent replay and a session event are what agents send most; each
count below is the whole request, key check included, so a lookup added to any layer shows here.
Counts are in the test's own transaction: the service's transaction is a SAVEPOINT and its
RELEASE (2 statements), where a served request sends BEGIN and COMMIT.
"""

from __future__ import annotations

import pytest

from agents.models import Job
from governance.kernel.models import AuditEvent
from sessions.models import AISession, SessionMessage

URL = "https://example.com/query-count"


def envelope(url: str) -> dict:
    return {
        "intent": "seo_audit",
        "scope": {"entityType": "page"},
        "payload": {"urls": [url]},
        "context": {"source": "cron"},
    }


@pytest.fixture
def warm_api(vlevel_api):
    """After a first submission: the key's last use was written within the minute (it is once per
    API_KEY_LAST_USED_RESOLUTION, tested in test_api_keys) and the process holds the manifest
    (read once per process, agents/registry.py), as on a server that has been up a while."""
    assert vlevel_api.post("/jobs", envelope("https://example.com/warm-up")).status_code == 201
    return vlevel_api


@pytest.mark.django_db
def test_a_submission_reads_the_key_and_the_claim_then_writes_claim_job_and_audit_row(
    warm_api, django_assert_num_queries
):
    # key, live claim, the registries' intent and entity type (one query), the manifest's required skills as the
    # registry has them now (one query); SAVEPOINT, claim, job, audit row, RELEASE
    with django_assert_num_queries(9):
        response = warm_api.post("/jobs", envelope(URL))

    assert response.status_code == 201
    assert Job.objects.filter(pk=response.json()["jobId"]).exists()
    assert AuditEvent.objects.filter(action="job.submitted", target_id=response.json()["jobId"]).count() == 1


@pytest.mark.django_db
def test_a_replay_reads_the_key_and_the_claim_and_writes_nothing(warm_api, django_assert_num_queries):
    first = warm_api.post("/jobs", envelope(URL)).json()

    with django_assert_num_queries(2):  # key, live claim with its job
        response = warm_api.post("/jobs", envelope(URL))

    assert (response.status_code, response["Idempotent-Replayed"]) == (200, "true")
    assert response.json() == first


@pytest.mark.django_db
def test_a_chat_event_locks_the_session_and_writes_its_message_and_state(warm_api, django_assert_num_queries):
    chat = warm_api.post("/sessions", {"type": "CHAT", "name": "count"}).json()["sessionId"]
    event = {"type": "UserMessageSent", "payload": {"text": "How are my audits doing?"}}

    # key, the session seen by the edge; SAVEPOINT, session locked, last seq, message, session, RELEASE
    with django_assert_num_queries(8):
        response = warm_api.post(f"/sessions/{chat}/events", event)

    assert response.status_code == 200
    assert response.json()["state"]["phase"] == "CALLING_AI"
    assert SessionMessage.objects.filter(session_id=chat, sender="USER").count() == 1


@pytest.mark.django_db
def test_an_event_written_without_the_orm_still_stamps_the_session_and_numbers_its_messages(warm_api):
    chat = warm_api.post("/sessions", {"type": "CHAT", "name": "stamps"}).json()["sessionId"]
    started = AISession.objects.get(pk=chat).last_activity

    warm_api.post(f"/sessions/{chat}/events", {"type": "UserMessageSent", "payload": {"text": "one"}})
    answer = {"type": "AIResponseReceived", "payload": {"content": '{"preText": "ok"}'}}
    warm_api.post(f"/sessions/{chat}/events", answer)

    session = AISession.objects.get(pk=chat)
    assert session.last_activity > started  # auto_now, as save() applied it
    messages = list(SessionMessage.objects.filter(session_id=chat).order_by("seq"))
    assert [(m.seq, m.sender) for m in messages] == [(1, "USER"), (2, "AI")]
    assert messages[1].ai_message == {"preText": "ok"}
