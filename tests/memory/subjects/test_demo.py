"""The memory demo brings seed 002's Alice, through the import service, once: loading again
writes nothing more, and a subject "alice" imported before the demo is never overwritten."""

from __future__ import annotations

from io import StringIO

import pytest
from django.urls import reverse

from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM
from memory import demo
from memory.models import Conversation, Preference, Subject, SubjectMemory
from memory.subjects import services as subjects

pytestmark = pytest.mark.django_db


def load() -> str:
    out = StringIO()
    demo.load(out)
    return out.getvalue()


def subject_counts() -> dict[str, int]:
    return {
        "conversations": Conversation.objects.count(),
        "preferences": Preference.objects.count(),
        "memories": SubjectMemory.objects.count(),
        "imports": AuditEvent.objects.filter(action="subject.imported").count(),
    }


def test_the_demo_imports_alice_once_and_her_page_shows_her(client, viewer):
    output = load()

    assert output.endswith(", subject alice (2 conversations, 7 facts, 6 memories)\n")
    assert output.count("\n") == 1
    before = subject_counts()
    assert before == {"conversations": 2, "preferences": 3, "memories": 6, "imports": 1}
    assert AuditEvent.objects.get(action="subject.imported").actor == "system"
    assert load() == ""
    assert subject_counts() == before
    client.force_login(viewer)
    html = client.get(reverse("memory:subject-detail", args=["alice"])).content.decode()
    assert 'id="fact-preference-pref_001"' in html
    assert "jazz" in html


def test_an_alice_imported_before_the_demo_is_left_alone():
    subjects.import_documents("alice", {}, actor=SYSTEM)

    assert not load().endswith("memories)\n")
    assert Subject.objects.get(key="alice").documents == {}
    assert not Conversation.objects.exists()
