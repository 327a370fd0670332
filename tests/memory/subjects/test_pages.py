"""Subject pages (seed 002): the list with its htmx search, one subject's whole memory, and the
correction of a wrong fact in place, each for a viewer, an admin, an outsider and an anonymous
visitor; edits go through ``subjects.correct_fact`` and leave an audit row naming the user."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM
from memory.models import Embedding, LifeEvent, Preference, Relationship, Subject, SubjectMemory
from memory.subjects import documents as subject_documents
from memory.subjects import emotions, personality
from memory.subjects import services as subjects
from tests.factories.memory import EmbeddingFactory, ProfileFactFactory, SubjectFactory

ALICE = Path(subjects.__file__).resolve().parent / "fixtures" / "alice"
HTMX = {"HTTP_HX_REQUEST": "true"}


def documents() -> dict:
    return {
        name: json.loads((ALICE / f"{name}.json").read_text(encoding="utf-8")) for name in subject_documents.DOCUMENTS
    }


@pytest.fixture
def alice(db) -> Subject:
    """Seed 002's example subject, imported as an assistant's export would be (no vectors)."""
    subjects.import_documents("alice", documents(), actor=SYSTEM)
    return Subject.objects.get(key="alice")


def login(client: Client, user) -> Client:
    client.force_login(user)
    return client


@pytest.fixture
def as_viewer(client, viewer) -> Client:
    return login(client, viewer)


@pytest.fixture
def as_admin(client, admin_operator) -> Client:
    return login(client, admin_operator)


def text(response) -> str:
    assert response.status_code == 200, response.status_code
    return unescape(response.content.decode())


def fact_url(name: str, kind: str = "preference", fact_id: str = "pref_001", key: str = "alice") -> str:
    return reverse(name, args=[key, kind, fact_id])


EDIT, DELETE, ROW = "memory:subject-fact-edit", "memory:subject-fact-delete", "memory:subject-fact"
JAZZ = {
    "category": "musique",
    "item": "jazz",
    "sentiment": "positive",
    "confidence": "0.95",
    "context": "Alice a dit 'j'aime beaucoup la musique jazz'",
}


# Access ------------------------------------------------------------------------------------------


def page_urls() -> list[str]:
    return [
        reverse("memory:subject-list"),
        reverse("memory:subject-detail", args=["alice"]),
        fact_url(ROW),
        fact_url(EDIT),
        fact_url(DELETE),
    ]


def test_anonymous_visitors_are_sent_to_the_login(client, alice):
    for url in page_urls():
        response = client.get(url)
        assert response.status_code == 302, url
        assert response.url.startswith(reverse("login")), url


def test_an_account_without_a_role_is_refused(client, outsider, alice):
    login(client, outsider)
    for url in page_urls():
        assert client.get(url).status_code == 403, url
    assert client.post(fact_url(EDIT), JAZZ).status_code == 403
    assert client.post(fact_url(DELETE)).status_code == 403


def test_unknown_subjects_kinds_and_facts_are_404(as_admin, alice):
    assert as_admin.get(reverse("memory:subject-detail", args=["nobody"])).status_code == 404
    assert as_admin.get(fact_url(EDIT, kind="profile", fact_id="name")).status_code == 404
    assert as_admin.get(fact_url(EDIT, fact_id="pref_999")).status_code == 404
    assert as_admin.post(fact_url(DELETE, key="nobody")).status_code == 404


# The list ----------------------------------------------------------------------------------------


def row_of(html: str, key: str) -> str:
    match = re.search(rf"<tr>\s*<td><a href=\"/memory/subjects/{key}/\">{key}</a></td>.*?</tr>", html, re.S)
    assert match, key
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", match.group(0))).strip()


def test_the_list_shows_counts_current_emotion_and_last_update(as_viewer, alice):
    html = text(as_viewer.get(reverse("memory:subject-list")))

    latest = timezone.localtime(SubjectMemory.objects.get(key="pref_003").timestamp)  # pizza, 2025-11-17
    # conversations, facts (name + 3 preferences + 1 event + 2 relationships), memories
    assert row_of(html, "alice") == f"alice 2 7 6 joyeux 0.75 {latest:%Y-%m-%d %H:%M}"
    assert "1 subject" in html


def test_a_subject_without_documents_is_listed_with_zeros(as_viewer, alice):
    SubjectFactory(key="empty")

    assert row_of(text(as_viewer.get(reverse("memory:subject-list"))), "empty") == "empty 0 0 0 — —"


def test_the_search_swaps_only_the_table_and_matches_keys_and_names(as_viewer, alice):
    ProfileFactFactory(subject=SubjectFactory(key="bob"), field="name", value="Robert")
    url = reverse("memory:subject-list")

    partial = text(as_viewer.get(url, {"q": "rob"}, **HTMX))
    assert "<html" not in partial
    assert 'href="/memory/subjects/bob/"' in partial
    assert 'href="/memory/subjects/alice/"' not in partial
    assert "1 subject matching “rob”" in partial

    full = text(as_viewer.get(url, {"q": "ALI"}))
    assert "<html" in full
    assert 'hx-get="/memory/subjects/"' in full
    assert 'href="/memory/subjects/alice/"' in full
    assert 'href="/memory/subjects/bob/"' not in full
    assert "No subject matches this search." in text(as_viewer.get(url, {"q": "zzz"}, **HTMX))


def test_the_list_costs_the_same_queries_for_one_subject_or_many(as_viewer, alice):
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert as_viewer.get(reverse("memory:subject-list")).status_code == 200
        return len(captured)

    one = queries()
    for key in ("bob", "carol", "dave"):
        subjects.import_documents(key, documents(), actor=SYSTEM)
    assert queries() == one


def test_the_memory_pages_link_to_the_subjects(as_viewer, alice):
    assert 'href="/memory/subjects/"' in text(as_viewer.get(reverse("memory:memory-overview")))


# The detail page ---------------------------------------------------------------------------------


def test_the_detail_page_shows_the_conversations(as_viewer, alice):
    html = text(as_viewer.get(reverse("memory:subject-detail", args=["alice"])))

    assert "Conversations (2)" in html
    assert "Alice a partagé ses frustrations sur un projet de travail difficile." in html
    assert "Artistes préférés : Miles Davis, John Coltrane" in html  # a key point
    assert '<span class="tag">productivité</span>' in html
    assert "25 messages" in html
    assert "mixed -0.20" in html
    assert 'dominant emotion <span class="emotion">frustré</span>' in html
    assert html.index("conv_20251116_001") < html.index("conv_20251116_002")  # oldest first


def test_the_detail_page_shows_facts_by_kind_with_their_confidence(as_viewer, alice):
    html = text(as_viewer.get(reverse("memory:subject-detail", args=["alice"])))

    for heading in ("Profile", "Preferences (3)", "Events (1)", "Relationships (2)"):
        assert heading in html
    jazz = re.search(r'<tr id="fact-preference-pref_001".*?</tr>', html, re.S).group(0)
    assert "jazz" in jazz
    assert '<meter min="0" max="1" value="0.950000" aria-label="Confidence">95%</meter>' in jazz
    assert "Miles Davis" in html
    assert "Alice a commencé un projet de travail frustrant" in html


def test_the_detail_page_shows_emotions_with_their_chart_transitions_and_statistics(as_viewer, alice):
    html = text(as_viewer.get(reverse("memory:subject-detail", args=["alice"])))

    chart = re.search(r'<svg class="line-chart emotion-chart".*?</svg>', html, re.S).group(0)
    assert re.findall(r'<text class="emotion-label"[^>]*>([^<]+)</text>', chart) == [
        "neutre",
        "joyeux",
        "joyeux",
        "frustré",
        "empathique",
    ]
    assert chart.count("<circle") == 5
    assert '98</span><span class="stat-label">Emotions recorded (5 kept of at most 100)' in html
    assert 'joyeux</span><span class="stat-label">Most frequent (35 times)' in html
    assert '0.68</span><span class="stat-label">Mean intensity' in html  # of everything ever recorded
    transitions = re.search(r'<table class="list compact transitions">.*?</table>', html, re.S).group(0)
    cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>.*?</td>", transitions, re.S)]
    assert cells[:6] == ["neutre", "joyeux", "15", "2 min", "0.25", "allowed"]
    assert ["joyeux", "frustré", "3", "5 min", "0.00", "would be refused"] in [cells[i : i + 6] for i in (6, 12)]


def test_the_detail_page_shows_the_personality_chart_traits_and_system_prompt(as_viewer, alice):
    html = text(as_viewer.get(reverse("memory:subject-detail", args=["alice"])))

    chart = re.search(r'<svg class="line-chart trait-chart".*?</svg>', html, re.S).group(0)
    assert chart.count('<polyline class="trait-line') == 7
    assert chart.count("Initial default values") == 1  # one tick per snapshot, with its reason
    for trait in subject_documents.TRAITS:
        assert f"</span>{trait}</li>" in html  # the legend
    assert 'aria-label="formalité">35%</meter>' in html
    assert "Tu es Kira, une assistante virtuelle équilibrée, profondément empathique" in html


def test_the_detail_page_costs_the_same_queries_however_long_the_memory(as_admin, alice):
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert as_admin.get(reverse("memory:subject-detail", args=["alice"])).status_code == 200
        return len(captured)

    short = queries()
    for n in range(10):
        values = {"category": "musique", "item": f"style {n}", "sentiment": "positive", "confidence": 0.5}
        subjects.add_fact_checked(alice, "preference", values, actor=SYSTEM)
        emotions.record(alice, actor=SYSTEM, emotion="joyeux", intensity=0.5, triggered_by="system")
    personality.record_interactions(alice, actor=SYSTEM, count=60, feedback={"humour": 0.1}, reason="jokes")
    assert queries() == short


def test_a_subject_without_documents_has_a_page_with_the_default_personality(as_viewer, db):
    SubjectFactory(key="empty")

    html = text(as_viewer.get(reverse("memory:subject-detail", args=["empty"])))

    assert "No conversation recorded." in html
    assert "No emotion recorded." in html
    assert "No personality recorded: the defaults apply." in html
    assert "<svg" not in html
    assert "profondément empathique" in html  # empathie 0.8 by default


def test_viewers_get_no_fact_actions_and_admins_get_them(client, viewer, admin_operator, alice):
    url = reverse("memory:subject-detail", args=["alice"])
    viewed = text(login(client, viewer).get(url))
    assert fact_url(EDIT) not in viewed
    assert fact_url(DELETE) not in viewed

    administered = text(login(client, admin_operator).get(url))
    for kind, fact_id in (("preference", "pref_001"), ("event", "event_001"), ("relationship", "rel_002")):
        assert f'hx-get="{fact_url(EDIT, kind, fact_id)}"' in administered
        assert f'hx-get="{fact_url(DELETE, kind, fact_id)}"' in administered


# Correcting a fact -------------------------------------------------------------------------------


def test_the_edit_form_replaces_the_row_with_the_current_values(as_admin, alice):
    html = text(as_admin.get(fact_url(EDIT), **HTMX))

    assert html.lstrip().startswith('<tr id="fact-preference-pref_001" class="fact-row fact-editing">')
    assert 'hx-post="/memory/subjects/alice/facts/preference/pref_001/edit/"' in html
    assert 'name="csrfmiddlewaretoken"' in html
    assert 'name="confidence" value="0.95"' in html
    assert 'id="id_pref_001_item"' in html
    assert f'hx-get="{fact_url(ROW)}"' in html  # Cancel swaps the row back
    assert 'id="fact-preference-pref_001"' in text(as_admin.get(fact_url(ROW), **HTMX))


def test_an_edit_changes_the_row_and_is_audited_with_the_user(as_admin, admin_operator, alice):
    response = as_admin.post(fact_url(EDIT), {**JAZZ, "confidence": "0.5"}, **HTMX)

    html = text(response)
    assert html.lstrip().startswith('<tr id="fact-preference-pref_001" class="fact-row fact-saved">')
    assert 'value="0.500000" aria-label="Confidence">50%</meter>' in html
    assert "Saved." in html
    assert Preference.objects.get(subject=alice, pref_id="pref_001").confidence == 0.5
    event = AuditEvent.objects.get(action="subject.preference_edited")
    assert event.actor == f"user:{admin_operator.username}"
    assert event.data == {"fact": "pref_001", "fields": ["confidence"]}
    assert event.target_id == str(alice.pk)


def test_an_edit_of_an_event_and_a_relationship(as_admin, alice):
    event = {
        "description": "Alice a fini son projet",
        "importance": "0.4",
        "sentiment": "positive",
        "related_topics": "travail, fierté , ",
    }
    assert "Saved." in text(as_admin.post(fact_url(EDIT, "event", "event_001"), event, **HTMX))
    saved = LifeEvent.objects.get(subject=alice, event_id="event_001")
    assert (saved.description, saved.importance, saved.related_topics) == (
        "Alice a fini son projet",
        0.4,
        ["travail", "fierté"],
    )
    relationship = {"entity_1": "Alice", "relation_type": "admire", "entity_2": "Miles Davis", "confidence": "1"}
    assert "Saved." in text(as_admin.post(fact_url(EDIT, "relationship", "rel_001"), relationship, **HTMX))
    assert Relationship.objects.get(subject=alice, rel_id="rel_001").relation_type == "admire"
    fields = dict(AuditEvent.objects.filter(action__endswith="_edited").values_list("action", "data__fields"))
    assert fields == {
        "subject.event_edited": ["description", "importance", "related_topics", "sentiment"],
        "subject.relationship_edited": ["confidence", "relation_type"],
    }


def test_an_unchanged_form_writes_nothing(as_admin, alice):
    assert "Nothing changed." in text(as_admin.post(fact_url(EDIT), JAZZ, **HTMX))
    assert not AuditEvent.objects.filter(action="subject.preference_edited").exists()


def test_an_invalid_edit_shows_the_errors_and_changes_nothing(as_admin, alice):
    before = list(Preference.objects.filter(subject=alice).values())

    html = text(as_admin.post(fact_url(EDIT), {**JAZZ, "confidence": "1.5", "item": "", "sentiment": "meh"}, **HTMX))

    assert 'class="fact-row fact-editing"' in html
    assert "Ensure this value is less than or equal to 1.0." in html
    assert "This field is required." in html
    assert "Select a valid choice. meh is not one of the available choices." in html
    assert 'name="confidence" value="1.5"' in html  # what was typed stays, to be fixed
    assert list(Preference.objects.filter(subject=alice).values()) == before
    assert not AuditEvent.objects.filter(action__startswith="subject.preference").exists()


def test_the_seed_schema_is_checked_too(as_admin, alice):
    """A topic longer than the seed allows would make an export its own import refuses."""
    event = {"description": "x", "importance": "0.4", "sentiment": "positive", "related_topics": "a" * 301}

    html = text(as_admin.post(fact_url(EDIT, "event", "event_001"), event, **HTMX))

    assert "String should have at most 300 characters" in html
    assert LifeEvent.objects.get(subject=alice, event_id="event_001").related_topics == ["travail", "stress"]


def test_without_htmx_an_edit_is_a_page_then_a_redirect_and_errors_are_400(as_admin, alice):
    page = text(as_admin.get(fact_url(EDIT)))
    assert "<html" in page
    assert "hx-post" not in page.split('class="fact-form"')[1].split(">")[0]

    invalid = as_admin.post(fact_url(EDIT), {**JAZZ, "confidence": "-1"})
    assert invalid.status_code == 400
    assert "Ensure this value is greater than or equal to 0.0." in invalid.content.decode()

    saved = as_admin.post(fact_url(EDIT), {**JAZZ, "item": "bebop"})
    assert saved.status_code == 302
    assert saved.url == "/memory/subjects/alice/#fact-preference-pref_001"
    assert Preference.objects.get(subject=alice, pref_id="pref_001").item == "bebop"


# Deleting a fact ---------------------------------------------------------------------------------


def test_deleting_asks_for_confirmation_first(as_admin, alice):
    html = text(as_admin.get(fact_url(DELETE), **HTMX))

    assert 'class="fact-row fact-confirming"' in html
    assert "Delete pref_001 (musique: jazz)?" in html
    assert 'hx-post="/memory/subjects/alice/facts/preference/pref_001/delete/"' in html
    assert Preference.objects.filter(subject=alice, pref_id="pref_001").exists()
    assert "<html" in text(as_admin.get(fact_url(DELETE)))  # the same question as a page without htmx


def test_a_delete_removes_the_fact_its_memory_and_vector_and_is_audited(as_admin, admin_operator, alice):
    memory = SubjectMemory.objects.get(subject=alice, key="pref_001")
    EmbeddingFactory(kind="subject", object_id=memory.pk, subject=alice)

    html = text(as_admin.post(fact_url(DELETE), **HTMX))

    assert 'class="fact-row fact-deleted"' in html
    assert f"Deleted by {admin_operator.username}" in html
    assert not Preference.objects.filter(subject=alice, pref_id="pref_001").exists()
    assert not SubjectMemory.objects.filter(pk=memory.pk).exists()
    assert not Embedding.objects.filter(kind="subject", object_id=memory.pk).exists()
    assert Preference.objects.filter(subject=alice).count() == 2
    event = AuditEvent.objects.get(action="subject.preference_deleted")
    assert (event.actor, event.data) == (f"user:{admin_operator.username}", {"fact": "pref_001"})
    assert as_admin.post(fact_url(DELETE), **HTMX).status_code == 404  # gone


def test_without_htmx_a_delete_redirects_to_the_facts(as_admin, alice):
    response = as_admin.post(fact_url(DELETE, "relationship", "rel_002"))

    assert response.status_code == 302
    assert response.url == "/memory/subjects/alice/#facts-relationship"
    assert list(Relationship.objects.filter(subject=alice).values_list("rel_id", flat=True)) == ["rel_001"]


def test_a_viewer_can_neither_edit_nor_delete(as_viewer, alice):
    assert as_viewer.get(fact_url(EDIT), **HTMX).status_code == 403
    assert as_viewer.post(fact_url(EDIT), {**JAZZ, "confidence": "0.1"}, **HTMX).status_code == 403
    assert as_viewer.get(fact_url(DELETE), **HTMX).status_code == 403
    assert as_viewer.post(fact_url(DELETE), **HTMX).status_code == 403
    assert as_viewer.get(fact_url(ROW), **HTMX).status_code == 200  # reading stays allowed
    assert Preference.objects.get(subject=alice, pref_id="pref_001").confidence == 0.95
    assert not AuditEvent.objects.filter(action__startswith="subject.preference").exists()


def test_posts_without_the_csrf_token_are_refused(admin_operator, alice):
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_operator)

    assert client.post(fact_url(EDIT), {**JAZZ, "confidence": "0.1"}, **HTMX).status_code == 403
    assert client.post(fact_url(DELETE), **HTMX).status_code == 403
    assert Preference.objects.get(subject=alice, pref_id="pref_001").confidence == 0.95

    # The token the page puts on <body hx-headers> is the one htmx sends: with it, the edit goes through.
    page = text(client.get(reverse("memory:subject-detail", args=["alice"])))
    token = re.search(r'hx-headers=\'\{"X-CSRFToken": "([^"]+)"\}\'', page).group(1)
    response = client.post(fact_url(EDIT), {**JAZZ, "confidence": "0.1"}, HTTP_X_CSRFTOKEN=token, **HTMX)
    assert response.status_code == 200
    assert Preference.objects.get(subject=alice, pref_id="pref_001").confidence == 0.1
