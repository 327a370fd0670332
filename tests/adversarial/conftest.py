"""The hostile callers of the adversarial suite, and the two things every refusal must prove:
nothing was written, and the attempt is in the audit trail."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.db import connection

from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM
from governance.kernel.services import REFUSED, issue_api_key, revoke_api_key
from memory.subjects import documents as subject_documents
from memory.subjects import services as subjects
from tests.conftest import Api, load
from tests.factories import UserFactory

ALICE = Path(subjects.__file__).resolve().parent / "fixtures" / "alice"
# Tables a refused request may touch without writing anything of its own: the trail itself, a
# key's last use, and the login throttling and session bookkeeping of the web side.
UNWATCHED = ("governance_auditevent", "governance_apikey", "axes_", "django_session")


def table_fingerprints() -> dict[str, str]:
    """An MD5 of every row of every table: any insert, update or delete changes it."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename",
        )
        tables = [name for (name,) in cursor.fetchall() if not name.startswith(UNWATCHED)]
        prints = {}
        for table in tables:
            quoted = connection.ops.quote_name(table)
            cursor.execute(f"SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) FROM {quoted} t")
            prints[table] = cursor.fetchone()[0]
    return prints


@contextmanager
def nothing_written() -> Iterator[None]:
    before = table_fingerprints()
    yield
    after = table_fingerprints()
    changed = sorted(table for table in before if before[table] != after.get(table))
    assert not changed, f"a refused request changed {changed}"


def refusals_since(last_id: int) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(pk__gt=last_id, action=REFUSED).order_by("pk"))


def last_audit_id() -> int:
    return AuditEvent.objects.order_by("-pk").values_list("pk", flat=True).first() or 0


@dataclass
class World:
    """One fleet as an attacker finds it: two agents with manifests, one's job, session, review
    item and automation, and a subject's memory."""

    owner: Api
    other: Api
    outsider: Api
    reviewer: Api
    revoked: Api
    anonymous: Api
    job_id: str
    session_id: str
    review_item_id: int
    automation_id: int


@pytest.fixture
def world(client, db) -> World:
    vlevel = load("agent.seo.vlevel")
    indexer = load("agent.rag.indexer")

    def key(**owner: object) -> str:
        return issue_api_key(actor=SYSTEM, name="adversarial", **owner)[1]

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
    automation = owner.post(
        "/automations", {"name": "nightly", "trigger": "MANUAL", "messages": [{"text": "audit the shop"}]}
    )
    assert automation.status_code == 201, automation.content
    return World(
        owner=owner,
        other=Api(client, key(agent=indexer)),
        outsider=Api(client, key(user=UserFactory(username="oscar"))),
        reviewer=Api(client, key(user=UserFactory(username="rita", roles=["Reviewer"]))),
        revoked=Api(client, revoked_key),
        anonymous=Api(client),
        job_id=job.json()["jobId"],
        session_id=session["sessionId"],
        review_item_id=pending.json()["reviewItemId"],
        automation_id=automation.json()["id"],
    )
