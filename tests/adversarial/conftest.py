"""The hostile callers of the adversarial suite (tests/support/world.py); what every refusal must
prove is in tests/support/refusals.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.contrib.auth.base_user import AbstractBaseUser

from agents import triggers
from agents.models import Agent, JobTrigger
from governance.kernel.principals import SYSTEM
from governance.kernel.services import issue_api_key, revoke_api_key
from memory.subjects import documents as subject_documents
from memory.subjects import services as subjects
from tests.factories.governance import UserFactory
from tests.support.api import Api
from tests.support.manifests import load
from tests.support.world import World

ALICE = Path(subjects.__file__).resolve().parent / "fixtures" / "alice"


@pytest.fixture
def world(client, db) -> World:
    vlevel = load("agent.seo.vlevel")
    indexer = load("agent.rag.indexer")

    def key(*, agent: Agent | None = None, user: AbstractBaseUser | None = None) -> str:
        return issue_api_key(actor=SYSTEM, name="adversarial", agent=agent, user=user)[1]

    revoked_row, revoked_key = issue_api_key(actor=SYSTEM, name="revoked", agent=vlevel)
    revoke_api_key(revoked_row, actor=SYSTEM)
    owner = Api(client, key(agent=vlevel))
    documents = {
        name: json.loads((ALICE / f"{name}.json").read_text(encoding="utf-8")) for name in subject_documents.DOCUMENTS
    }
    subjects.import_documents("alice", documents, actor=SYSTEM)
    job = owner.post(
        "/jobs",
        {
            "intent": "seo_audit",
            "scope": {"entityType": "page"},
            "payload": {"urls": ["https://example.com/"]},
            "context": {"source": "manual"},
        },
    )
    assert job.status_code == 201, job.content
    session = owner.post("/sessions", {"type": "CHAT", "name": "hostile"}).json()
    pending = owner.post(
        "/agents/agent.seo.vlevel/tools/mcp__chrome-devtools__take_snapshot/calls", {"arguments": {"url": "x"}}
    )
    assert pending.status_code == 202, pending.content
    webhook = JobTrigger(name="orders", agent=vlevel, kind="webhook", intent="seo_audit", entity_type="page")
    triggers.save_trigger(webhook, actor=SYSTEM, changed=[])
    automation = owner.post(
        "/automations", {"name": "nightly", "trigger": "MANUAL", "messages": [{"text": "audit the shop"}]}
    )
    assert automation.status_code == 201, automation.content
    return World(
        owner=owner,
        other=Api(client, key(agent=indexer)),
        outsider=Api(client, key(user=UserFactory.create(username="oscar"))),
        reviewer=Api(client, key(user=UserFactory.create(username="rita", roles=["Reviewer"]))),
        revoked=Api(client, revoked_key),
        anonymous=Api(client),
        job_id=job.json()["jobId"],
        session_id=session["sessionId"],
        review_item_id=pending.json()["reviewItemId"],
        automation_id=automation.json()["id"],
    )
