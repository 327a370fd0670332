"""POST /sessions for an AUTOMATION carries its instructions (seed 003 section 6: an automation's
messages and enrichments): stored where every automation run keeps them, run at activation, read
by the model; checked with their paths before anything is written."""

from __future__ import annotations

import pytest

from sessions import scheduler
from sessions.models import AISession

pytestmark = pytest.mark.django_db

USE_JOBS = {"resource": "jobs", "filters": {"agent_id": "agent.seo.vlevel"}, "period": "-1_DAY"}
INSTRUCTIONS = [
    {"text": "Audit yesterday's failed jobs."},
    {
        "segments": [
            {"type": "text", "text": "Start from"},
            {"type": "enrichment", "enrichmentType": "USE", "config": USE_JOBS},
        ]
    },
]


def create(api, **body):
    return api.post("/sessions", {"type": "AUTOMATION", "name": "Nightly audit", **body})


def test_an_operator_cannot_create_a_session_with_instructions(admin_api, vlevel):
    refused = create(admin_api, messages=INSTRUCTIONS)

    assert refused.status_code == 403
    assert not AISession.objects.exists()


def test_an_agent_without_a_manifest_is_refused_r1(agent_api):
    refused = create(agent_api, messages=INSTRUCTIONS)

    assert refused.status_code == 403
    assert "R1" in refused.json()["detail"]
    assert not AISession.objects.exists()


def test_the_instructions_start_the_session_and_the_model_reads_them(vlevel_api):
    created = create(vlevel_api, messages=INSTRUCTIONS)

    assert created.status_code == 201, created.content
    session_id = created.json()["sessionId"]
    assert (created.json()["phase"], created.json()["isActive"]) == ("CALLING_AI", True)
    session = AISession.objects.get(pk=session_id)
    users = list(session.messages.filter(sender="USER").order_by("seq"))
    assert [m.rich_content["linearText"] for m in users] == [
        "Audit yesterday's failed jobs.",
        "Start from [Uses jobs of agent.seo.vlevel over yesterday]",
    ]
    assert users[1].rich_content["dataCommands"][0]["params"]["period"] == "-1_DAY"  # relative, as automations
    assert session.messages.filter(sender="SYSTEM", system_type="DATA_ADDED").exists()  # enrichments ran

    texts = [
        m["richContent"]["linearText"]
        for m in vlevel_api.get(f"/sessions/{session_id}/prompt").json()["sessionMessages"]
        if m["sender"] == "USER"
    ]
    assert texts[0] == "Audit yesterday's failed jobs."


def test_a_queued_automation_keeps_its_instructions_until_its_turn(vlevel_api):
    first = create(vlevel_api, messages=[{"text": "first"}]).json()
    second = create(vlevel_api, messages=[{"text": "second"}]).json()
    assert (second["isActive"], second["phase"]) == (False, "IDLE")

    vlevel_api.post(f"/sessions/{first['sessionId']}/stop")
    scheduler.tick()  # the slot is free: the queue's first starts

    session = AISession.objects.get(pk=second["sessionId"])
    assert (session.is_active, session.phase) == (True, "CALLING_AI")
    assert [m.rich_content["linearText"] for m in session.messages.filter(sender="USER")] == ["second"]


@pytest.mark.parametrize(
    ("messages", "loc"),
    [
        (
            [{"text": "ok"}, {"segments": [{"type": "enrichment", "enrichmentType": "SUMMON", "config": {}}]}],
            ["body", "messages", 1, "segments", 0],
        ),
        ([{"segments": "not a list"}], ["body", "messages", 0, "segments"]),
        ([{"text": "x" * 100_001}], ["body", "messages", 0, "text"]),
    ],
)
def test_invalid_instructions_are_422_with_their_path_and_nothing_is_written(vlevel_api, messages, loc):
    refused = create(vlevel_api, messages=messages)

    assert refused.status_code == 422, refused.content
    assert loc in [error["loc"] for error in refused.json()["errors"]]
    assert not AISession.objects.exists()


def test_a_chat_takes_no_instructions(vlevel_api):
    refused = vlevel_api.post("/sessions", {"type": "CHAT", "name": "Help", "messages": [{"text": "hi"}]})

    assert refused.status_code == 422
    assert refused.json()["errors"][0]["loc"] == ["body", "messages"]
    assert not AISession.objects.exists()
