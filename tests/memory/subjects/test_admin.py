"""Subject admin (seed 002): every table of a subject's memory is listed, filtered, searched and
read only; the realistic-transition matrix is the one thing operators edit here, and each edit is
audited."""

from __future__ import annotations

import json
from html import unescape
from pathlib import Path

import pytest
from django.urls import reverse

from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM
from memory.models import (
    Conversation,
    EmotionEvent,
    EmotionState,
    EmotionTransition,
    LifeEvent,
    PersonalityState,
    Preference,
    ProfileFact,
    Relationship,
    Subject,
    SubjectCounter,
    SubjectMemory,
    TraitSnapshot,
    TransitionProbability,
)
from memory.subjects import documents as subject_documents
from memory.subjects import emotions
from memory.subjects import services as subjects
from tests.factories.agents import AgentFactory

ALICE = Path(subjects.__file__).resolve().parent / "fixtures" / "alice"
READ_ONLY = {
    model._meta.model_name: model
    for model in (
        SubjectCounter,
        Conversation,
        ProfileFact,
        Preference,
        LifeEvent,
        Relationship,
        SubjectMemory,
        PersonalityState,
        TraitSnapshot,
        EmotionState,
        EmotionEvent,
        EmotionTransition,
    )
}


def page(response) -> str:
    assert response.status_code == 200, response.status_code
    return unescape(response.content.decode())


@pytest.fixture
def alice(db) -> Subject:
    documents = {
        name: json.loads((ALICE / f"{name}.json").read_text(encoding="utf-8")) for name in subject_documents.DOCUMENTS
    }
    subjects.import_documents("alice", documents, actor=SYSTEM)
    return Subject.objects.get(key="alice")


@pytest.mark.parametrize("model", list(READ_ONLY))
def test_every_subject_table_is_listed_and_read_only(admin_client, alice, model):
    row = READ_ONLY[model].objects.first()
    html = page(admin_client.get(reverse(f"admin:memory_{model}_changelist")))

    assert reverse(f"admin:memory_{model}_change", args=[row.pk]) in html
    assert "delete_selected" not in html
    assert admin_client.get(reverse(f"admin:memory_{model}_add")).status_code == 403
    assert admin_client.post(reverse(f"admin:memory_{model}_delete", args=[row.pk]), {"post": "yes"}).status_code == 403
    change = page(admin_client.get(reverse(f"admin:memory_{model}_change", args=[row.pk])))
    assert 'name="_save"' not in change
    assert "/memory/subjects/alice/" in change  # "View on site": the subject's page, where facts are corrected
    assert READ_ONLY[model].objects.filter(pk=row.pk).exists()


def test_the_subject_page_edits_only_which_agents_reach_it_and_audits_it(admin_client, alice):
    agent = AgentFactory(agent_id="agent.kira.chat")
    url = reverse("admin:memory_subject_change", args=[alice.pk])
    assert 'name="key"' not in page(admin_client.get(url))  # the key itself is read only

    response = admin_client.post(url, {"allowed_agents": [agent.pk], "key": "renamed"})

    assert response.status_code == 302
    alice.refresh_from_db()
    assert alice.key == "alice"
    assert list(alice.allowed_agents.values_list("agent_id", flat=True)) == ["agent.kira.chat"]
    event = AuditEvent.objects.get(action="subject.access_restricted")
    assert event.actor == "user:admin"
    assert event.data["after"] == ["agent.kira.chat"]
    delete = reverse("admin:memory_subject_delete", args=[alice.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403


def test_preferences_are_filtered_and_searched(admin_client, alice):
    url = reverse("admin:memory_preference_changelist")

    searched = page(admin_client.get(url, {"q": "pizza"}))
    assert "nourriture" in searched
    assert "guitare" not in searched
    filtered = page(admin_client.get(url, {"category": "instrument"}))
    assert "guitare" in filtered
    assert "pizza" not in filtered


def test_the_transition_matrix_is_listed_with_what_it_allows(admin_client, db):
    html = page(admin_client.get(reverse("admin:memory_transitionprobability_changelist"), {"from_emotion": "joyeux"}))

    assert "Allowed (&gt; 0.05)" in html or "Allowed (> 0.05)" in html
    assert 'name="form-0-probability"' in html  # edited in the list itself
    assert html.count('alt="False"') == 1  # joyeux -> triste, at 0.05 exactly


def test_a_change_to_the_matrix_applies_at_once_and_is_audited(admin_client, admin_user, db):
    row = TransitionProbability.objects.get(from_emotion="joyeux", to_emotion="triste")
    url = reverse("admin:memory_transitionprobability_change", args=[row.pk])

    response = admin_client.post(url, {"from_emotion": "joyeux", "to_emotion": "triste", "probability": "0.2"})

    assert response.status_code == 302
    assert emotions.allowed(emotions.matrix(), "joyeux", "triste").allowed
    event = AuditEvent.objects.get(action="transition_probability.changed")
    assert event.actor == f"user:{admin_user.username}"
    assert event.data == {"move": "joyeux -> triste", "probability": 0.2, "fields": ["probability"]}


def test_a_probability_outside_zero_one_is_a_form_error(admin_client, db):
    row = TransitionProbability.objects.get(from_emotion="joyeux", to_emotion="triste")
    url = reverse("admin:memory_transitionprobability_change", args=[row.pk])

    html = page(admin_client.post(url, {"from_emotion": "joyeux", "to_emotion": "triste", "probability": "1.5"}))

    assert "Ensure this value is less than or equal to 1.0." in html
    assert TransitionProbability.objects.get(pk=row.pk).probability == 0.05
    assert not AuditEvent.objects.filter(action__startswith="transition_probability.").exists()


def test_rows_of_the_matrix_are_added_and_deleted_with_an_audit_row(admin_client, db):
    add = reverse("admin:memory_transitionprobability_add")
    added = admin_client.post(add, {"from_emotion": "frustré", "to_emotion": "neutre", "probability": "0.4"})
    assert added.status_code == 302
    row = TransitionProbability.objects.get(from_emotion="frustré")

    deleted = admin_client.post(reverse("admin:memory_transitionprobability_delete", args=[row.pk]), {"post": "yes"})

    assert deleted.status_code == 302
    assert not TransitionProbability.objects.filter(from_emotion="frustré").exists()
    assert list(AuditEvent.objects.order_by("at", "pk").values_list("action", flat=True)) == [
        "transition_probability.added",
        "transition_probability.deleted",
    ]
