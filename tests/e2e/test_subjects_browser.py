"""An admin corrects Alice's memory in a real browser: opens her page, changes the confidence of
the jazz preference through the htmx form and sees the row update in place, then deletes an event
after confirming; both changes reach the database and the audit trail under the admin's name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM
from memory.models import LifeEvent, Preference, SubjectMemory
from memory.subjects import documents as subject_documents
from memory.subjects import services as subjects
from tests.e2e.test_inbox_browser import log_in

ALICE = Path(subjects.__file__).resolve().parent / "fixtures" / "alice"


def import_alice() -> None:
    documents = {
        name: json.loads((ALICE / f"{name}.json").read_text(encoding="utf-8")) for name in subject_documents.DOCUMENTS
    }
    subjects.import_documents("alice", documents, actor=SYSTEM)


@pytest.mark.django_db(transaction=True)
def test_an_admin_corrects_a_preference_and_deletes_an_event_in_the_browser(page, admin_operator):
    from playwright.sync_api import expect

    import_alice()
    log_in(page, admin_operator.username)
    page.locator(".mainnav").get_by_role("link", name="Subjects").click()
    page.get_by_role("link", name="alice", exact=True).click()
    page.wait_for_url("**/memory/subjects/alice/")

    jazz = page.locator("#fact-preference-pref_001")
    expect(jazz).to_contain_text("jazz")
    expect(jazz).to_contain_text("95%")
    jazz.get_by_role("link", name="Edit pref_001").click()
    jazz.get_by_role("spinbutton", name="Confidence").fill("0.6")  # the meter is named Confidence too
    jazz.get_by_role("button", name="Save pref_001").click()
    expect(jazz).to_contain_text("Saved.")
    expect(jazz).to_contain_text("60%")
    expect(jazz).to_contain_text("jazz")
    assert Preference.objects.get(pref_id="pref_001").confidence == 0.6

    event = page.locator("#fact-event-event_001")
    event.get_by_role("link", name="Delete event_001").click()
    expect(event).to_contain_text("Delete event_001 (Alice a commencé un projet de travail frustrant)?")
    assert LifeEvent.objects.filter(event_id="event_001").exists()  # asking is not deleting
    event.get_by_role("button", name="Yes, delete event_001").click()
    expect(event).to_contain_text(f"Deleted by {admin_operator.username}")
    assert not LifeEvent.objects.filter(event_id="event_001").exists()
    assert not SubjectMemory.objects.filter(key="event_001").exists()

    page.reload()
    expect(page.locator("#fact-event-event_001")).to_have_count(0)
    expect(page.locator("#fact-preference-pref_001")).to_contain_text("60%")
    actions = set(AuditEvent.objects.filter(action__startswith="subject.").values_list("action", "actor"))
    user = f"user:{admin_operator.username}"
    assert {("subject.preference_edited", user), ("subject.event_deleted", user)} <= actions
