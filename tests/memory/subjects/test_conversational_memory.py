"""Per-subject conversational memory (seed 002): the five documents imported and exported equal,
invalid documents refused with paths, semantic search with the real model, emotions, personality,
facts and erasure."""

from __future__ import annotations

import copy
import json

import pytest

from memory.models import Embedding, EmotionEvent, Preference, Subject, SubjectMemory
from memory.subjects import documents as subject_documents
from tests.support.subjects import ALICE, alice_documents

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent_api(vlevel_api):
    """An agent whose manifest enables long-term memory: only such agents reach subjects."""
    return vlevel_api


@pytest.fixture(scope="module")
def alice() -> dict:
    return alice_documents()


def test_the_seed_documents_round_trip_equal(admin_api, alice):
    response = admin_api.post("/memory/subjects/alice/import", alice)
    assert response.status_code == 200
    assert response.json() == {"conversations": 2, "facts": 7, "embeddings": 6, "personality": 3, "emotion_history": 8}
    exported = admin_api.get("/memory/subjects/alice/export")
    assert exported.status_code == 200
    assert exported.json() == alice


def test_importing_again_changes_nothing(admin_api, alice):
    admin_api.post("/memory/subjects/alice/import", alice)
    admin_api.post("/memory/subjects/alice/import", alice)
    assert admin_api.get("/memory/subjects/alice/export").json() == alice
    assert SubjectMemory.objects.count() == 6
    assert Embedding.objects.filter(kind="subject").count() == 6


def test_the_jazz_question_finds_the_jazz_preference_and_conversation_above_pizza(admin_api, agent_api, alice):
    """Seed 002's search example, with the real model."""
    admin_api.post("/memory/subjects/alice/import", alice)
    query = {"q": "Quels sont mes genres musicaux préférés ?", "k": 10}
    response = agent_api.get("/memory/subjects/alice/search", query)
    assert response.status_code == 200
    ranked = [hit["id"] for hit in response.json()]
    assert set(ranked[:2]) == {"pref_001", "conv_20251116_001"}
    assert ranked.index("pref_003") > 1
    scores = [hit["score"] for hit in response.json()]
    assert scores == sorted(scores, reverse=True)


def test_invalid_documents_are_refused_with_their_paths_and_nothing_is_written(admin_api, alice):
    broken = copy.deepcopy(alice)
    broken["facts"]["preferences"][1]["confidence"] = 1.5
    broken["conversations"]["conversations"][0]["sentiment_score"] = -3
    broken["personality"]["current_traits"].pop("humour")
    broken["embeddings"]["embeddings"][0]["embedding"] = [0.1, 0.2]
    response = admin_api.post("/memory/subjects/alice/import", broken)
    assert response.status_code == 422
    locs = [e["loc"] for e in response.json()["errors"]]
    assert ["body", "facts", "preferences", 1, "confidence"] in locs
    assert ["body", "conversations", "conversations", 0, "sentiment_score"] in locs
    assert ["body", "personality", "current_traits"] in locs
    assert ["body", "embeddings"] in locs
    assert not Subject.objects.exists()


def test_a_document_of_an_older_version_goes_through_its_migrations(admin_api, alice):
    """The shape of seed 002's v1 -> v2 example: a registered step rewrites the document first."""
    old = copy.deepcopy(alice["conversations"])
    old["version"] = "0.9"
    for conversation in old["conversations"]:
        conversation["sentiment"] = conversation.pop("overall_sentiment")

    @subject_documents.migration("conversations", "0.9", "1.0")
    def rename_sentiment(data: dict) -> dict:
        for conversation in data["conversations"]:
            conversation["overall_sentiment"] = conversation.pop("sentiment")
        return data

    try:
        assert admin_api.post("/memory/subjects/bob/import", {"conversations": old}).status_code == 200
    finally:
        subject_documents._MIGRATIONS.pop(("conversations", "0.9"))
    exported = admin_api.get("/memory/subjects/bob/export").json()["conversations"]
    assert exported == alice["conversations"]


def test_a_version_without_migrations_is_refused(admin_api, alice):
    future = {**alice["personality"], "version": "3.0"}
    response = admin_api.post("/memory/subjects/alice/import", {"personality": future})
    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["body", "personality", "version"]


def test_import_and_export_are_for_operators_with_the_permission(agent_api, viewer_api, admin_api, alice):
    assert agent_api.post("/memory/subjects/alice/import", alice).status_code == 403
    assert viewer_api.post("/memory/subjects/alice/import", alice).status_code == 403
    assert admin_api.get("/memory/subjects/nobody/export").status_code == 404


def test_new_facts_get_the_next_id_of_their_subject(admin_api, agent_api, alice):
    admin_api.post("/memory/subjects/alice/import", alice)
    body = {
        "kind": "preference",
        "values": {"category": "musique", "item": "rock", "sentiment": "positive", "confidence": 0.8},
    }
    response = agent_api.post("/memory/subjects/alice/facts", body)
    assert response.status_code == 201
    assert response.json() == {"id": "pref_004"}
    event = {"kind": "event", "values": {"description": "Concert", "importance": 0.4, "sentiment": "positive"}}
    assert agent_api.post("/memory/subjects/alice/facts", event).json() == {"id": "event_002"}
    assert SubjectMemory.objects.filter(key="pref_004", type="preference").exists()


def test_an_invalid_fact_is_422_with_its_path(admin_api, agent_api, alice):
    admin_api.post("/memory/subjects/alice/import", alice)
    body = {"kind": "relationship", "values": {"entity_1": "Alice", "relation_type": "aime", "confidence": 2}}
    response = agent_api.post("/memory/subjects/alice/facts", body)
    assert response.status_code == 422
    locs = [e["loc"] for e in response.json()["errors"]]
    assert ["body", "values", "entity_2"] in locs
    assert ["body", "values", "confidence"] in locs
    assert Preference.objects.count() == 3


def test_erasing_a_subject_leaves_no_row_of_it_in_any_table(admin_api, agent_api, alice):
    from django.apps import apps

    from governance.kernel.models import AuditEvent

    admin_api.post("/memory/subjects/alice/import", alice)
    admin_api.post("/memory/subjects/bob/import", {"facts": alice["facts"]})
    agent_api.post("/memory/subjects/alice/emotions", {"emotion": "neutre", "intensity": 0.5, "triggered_by": "system"})
    alice_id = Subject.objects.get(key="alice").pk
    response = admin_api.delete("/memory/subjects/alice")
    assert response.status_code == 204
    for model in apps.get_app_config("memory").get_models():
        fields = {f.name for f in model._meta.get_fields()}
        if "subject" in fields:
            assert not model.objects.filter(subject_id=alice_id).exists(), model.__name__
    assert not Subject.objects.filter(key="alice").exists()
    assert Subject.objects.filter(key="bob").exists()
    assert not AuditEvent.objects.filter(target_type="memory.subject", target_id=str(alice_id)).exists()
    erased = AuditEvent.objects.get(action="subject.erased")
    assert "alice" not in json.dumps(erased.data)
    assert erased.actor.startswith("user:")
    assert admin_api.get("/memory/subjects/alice/export").status_code == 404


def test_an_erasure_keeps_no_hash_of_the_key(admin_api, alice):
    """A hash of a name such as "alice" is reversed by hashing guesses: the audit row keeps a random
    erasure id, different at every erasure, and nothing derived from the key."""
    import hashlib
    import hmac

    from django.conf import settings

    from governance.kernel.models import AuditEvent

    ids = []
    for _ in range(2):
        admin_api.post("/memory/subjects/alice/import", {"facts": alice["facts"]})
        assert admin_api.delete("/memory/subjects/alice").status_code == 204
        erased = AuditEvent.objects.filter(action="subject.erased").latest("pk")
        stored = json.dumps(erased.data) + erased.target_id + erased.target_type
        digests = [
            hashlib.sha256(b"alice").hexdigest(),
            hashlib.md5(b"alice").hexdigest(),
            hmac.new(settings.SECRET_KEY.encode(), b"alice", hashlib.sha256).hexdigest(),
        ]
        for digest in digests:
            assert digest not in stored
        assert "alice" not in stored
        assert set(erased.data) == {"erasure_id"}
        ids.append(erased.data["erasure_id"])
    assert ids[0] != ids[1]
    assert AuditEvent.objects.filter(action="subject.erased").count() == 2


def test_only_operators_with_the_permission_erase(agent_api, viewer_api, admin_api, alice):
    admin_api.post("/memory/subjects/alice/import", {"facts": alice["facts"]})
    assert agent_api.delete("/memory/subjects/alice").status_code == 403
    assert viewer_api.delete("/memory/subjects/alice").status_code == 403
    assert Subject.objects.filter(key="alice").exists()


def test_emotions_follow_the_transition_matrix(admin_api, agent_api, alice):
    admin_api.post("/memory/subjects/alice/import", alice)  # current emotion: joyeux
    refused = agent_api.post(
        "/memory/subjects/alice/emotions", {"emotion": "énervé", "intensity": 0.6, "triggered_by": "user_message"}
    )
    assert refused.status_code == 422
    assert (refused.json()["from"], refused.json()["to"], refused.json()["probability"]) == ("joyeux", "énervé", 0.0)
    at_threshold = agent_api.post(
        "/memory/subjects/alice/emotions", {"emotion": "triste", "intensity": 0.3, "triggered_by": "user_message"}
    )
    assert at_threshold.status_code == 422
    assert at_threshold.json()["probability"] == 0.05
    news = {"emotion": "surpris", "intensity": 0.6, "context": "news", "triggered_by": "user_message"}
    accepted = agent_api.post("/memory/subjects/alice/emotions", news)
    assert accepted.status_code == 201
    history = admin_api.get("/memory/subjects/alice/export").json()["emotion_history"]
    assert history["current_emotion"] == "surpris"
    assert history["history"][-1]["context"] == "news"
    assert {"from": "joyeux", "to": "surpris"}.items() <= history["transitions"][-1].items()
    assert history["statistics"]["total_emotions_recorded"] == 99
    assert history["statistics"]["total_transitions"] == 43


def test_an_emotion_without_a_row_in_the_matrix_is_unconstrained(admin_api, agent_api, alice):
    unconstrained = {**alice["emotion_history"], "current_emotion": "empathique"}  # no row in the matrix
    admin_api.post("/memory/subjects/alice/import", {"emotion_history": unconstrained})
    for emotion in ("frustré", "empathique", "énervé"):
        body = {"emotion": emotion, "intensity": 0.5, "triggered_by": "assistant_response"}
        assert agent_api.post("/memory/subjects/alice/emotions", body).status_code == 201


def test_the_history_keeps_only_max_history_rows(admin_api, agent_api, alice):
    bounded = {**alice["emotion_history"], "max_history": 5, "current_emotion": "empathique"}
    admin_api.post("/memory/subjects/alice/import", {"emotion_history": bounded})
    for n in range(4):
        body = {"emotion": "empathique", "intensity": 0.5, "context": f"new {n}", "triggered_by": "system"}
        assert agent_api.post("/memory/subjects/alice/emotions", body).status_code == 201
    contexts = list(EmotionEvent.objects.values_list("context", flat=True))
    assert contexts == ["Réponse empathique aux frustrations Alice", "new 0", "new 1", "new 2", "new 3"]


def test_the_system_prompt_follows_the_traits(admin_api, agent_api, alice):
    admin_api.post("/memory/subjects/alice/import", alice)
    prompt = agent_api.get("/memory/subjects/alice/system-prompt").json()["prompt"]
    # extraversion 0.68 (balanced), empathie 0.82 (> 0.7), humour 0.54, formalité 0.35, curiosité 0.71, patience 0.75
    assert prompt == (
        "Tu es Kira, une assistante virtuelle équilibrée, profondément empathique et sensible aux émotions. "
        "Tu tutoies l'utilisateur avec un ton casual et amical. Tu poses beaucoup de questions et "
        "t'intéresses activement. Tu prends le temps d'expliquer en détail."
    )


def test_the_system_prompt_is_the_seeds_french_text_and_formality_chooses_tu_or_vous():
    """Seed 002's example prompt, word for word, and the formalité trait deciding tutoiement (at or
    below 0.6) or vouvoiement (above)."""
    from memory.subjects.personality import system_prompt

    example = {
        "extraversion": 0.8,
        "empathie": 0.9,
        "humour": 0.65,
        "formalité": 0.2,
        "curiosité": 0.8,
        "enthousiasme": 0.6,
        "patience": 0.5,
    }
    assert system_prompt(example) == (
        "Tu es Kira, une assistante virtuelle très bavarde et engageante, profondément empathique et sensible aux "
        "émotions. Tu utilises souvent l'humour pour détendre. Tu tutoies l'utilisateur avec un ton casual et "
        "amical. Tu poses beaucoup de questions et t'intéresses activement."
    )
    formal = system_prompt({**example, "formalité": 0.61, "humour": 0.2, "extraversion": 0.2, "empathie": 0.2})
    assert formal == (
        "Tu es Kira, une assistante virtuelle concise et directe, rationnelle et factuelle. Tu restes sérieuse et "
        "professionnelle. Tu vouvoies l'utilisateur et gardes un ton formel. Tu poses beaucoup de questions et "
        "t'intéresses activement."
    )
    assert "Tu tutoies" in system_prompt({**example, "formalité": 0.6})
    calm = {**example, "extraversion": 0.5, "empathie": 0.5, "humour": 0.5, "curiosité": 0.5, "patience": 0.2}
    assert system_prompt(calm) == (
        "Tu es Kira, une assistante virtuelle équilibrée, avec un équilibre entre raison et émotion. Tu tutoies "
        "l'utilisateur avec un ton casual et amical. Tu vas droit au but sans détails superflus."
    )


def test_a_new_personality_starts_its_history_with_the_initial_default_values(agent_api, admin_api):
    """Seed 002's trait_history begins with the defaults, reason "Initial default values"."""
    from memory.models import Subject, TraitSnapshot
    from memory.subjects.personality import DEFAULT_TRAITS

    Subject.objects.create(key="bob")
    response = agent_api.post("/memory/subjects/bob/interactions", {"count": 1, "feedback": {"humour": 0.1}})
    assert response.status_code == 200
    history = admin_api.get("/memory/subjects/bob/export").json()["personality"]["trait_history"]
    assert len(history) == 1
    assert history[0]["reason"] == "Initial default values"
    assert history[0]["traits"] == DEFAULT_TRAITS
    assert set(history[0]) == {"timestamp", "traits", "reason"}
    agent_api.post("/memory/subjects/bob/interactions", {"count": 1})
    assert TraitSnapshot.objects.filter(subject__key="bob", reason="Initial default values").count() == 1


@pytest.mark.parametrize(
    ("kind", "refused", "accepted"),
    [("preference", ["neutral", "mixed", "meh"], ["positive", "negative"]), ("event", ["mixed", "meh"], ["neutral"])],
)
def test_fact_sentiments_are_only_the_seeds_values(agent_api, admin_api, alice, kind, refused, accepted):
    """Seed 002: a preference is "positive" or "negative"; an event "positive", "negative" or "neutral"."""
    from memory.models import LifeEvent

    admin_api.post("/memory/subjects/alice/import", {"facts": alice["facts"]})
    model = Preference if kind == "preference" else LifeEvent
    before = model.objects.count()
    base = (
        {"category": "musique", "item": "rock", "confidence": 0.8}
        if kind == "preference"
        else {"description": "Concert", "importance": 0.4}
    )
    for sentiment in refused:
        response = agent_api.post(
            "/memory/subjects/alice/facts", {"kind": kind, "values": {**base, "sentiment": sentiment}}
        )
        assert response.status_code == 422, sentiment
        assert response.json()["errors"][0]["loc"] == ["body", "values", "sentiment"]
        facts = copy.deepcopy(alice["facts"])
        facts["preferences" if kind == "preference" else "events"][0]["sentiment"] = sentiment
        imported = admin_api.post("/memory/subjects/alice/import", {"facts": facts})
        assert imported.status_code == 422, sentiment
        where = "preferences" if kind == "preference" else "events"
        assert imported.json()["errors"][0]["loc"] == ["body", "facts", where, 0, "sentiment"]
    assert model.objects.count() == before
    for sentiment in accepted:
        response = agent_api.post(
            "/memory/subjects/alice/facts", {"kind": kind, "values": {**base, "sentiment": sentiment}}
        )
        assert response.status_code == 201, response.json()


def test_transition_durations_are_whole_seconds(admin_api, agent_api, alice):
    """Seed 002: avg_duration_seconds is an int; a fraction in an import is refused with its path."""
    from datetime import UTC, datetime, timedelta

    from memory.models import EmotionTransition

    broken = copy.deepcopy(alice["emotion_history"])
    broken["transitions"][0]["avg_duration_seconds"] = 120.5
    refused = admin_api.post("/memory/subjects/alice/import", {"emotion_history": broken})
    assert refused.status_code == 422
    assert refused.json()["errors"][0]["loc"] == ["body", "emotion_history", "transitions", 0, "avg_duration_seconds"]
    calm = {**alice["emotion_history"], "current_emotion": "neutre", "history": [], "transitions": []}
    admin_api.post("/memory/subjects/alice/import", {"emotion_history": calm})
    start = datetime(2026, 1, 1, 10, 0, 0, 400_000, tzinfo=UTC)
    for emotion, after in (("joyeux", 0), ("neutre", 90.7), ("joyeux", 190.9)):
        at = start + timedelta(seconds=after)
        body = {"emotion": emotion, "intensity": 0.5, "triggered_by": "system", "timestamp": at.isoformat()}
        assert agent_api.post("/memory/subjects/alice/emotions", body).status_code == 201
    transitions = admin_api.get("/memory/subjects/alice/export").json()["emotion_history"]["transitions"]
    # joyeux -> neutre after 90.7 s: 91; neutre -> joyeux twice, after 0 s (no start known) and 100.2 s: 50
    assert {(t["from"], t["to"]): t["avg_duration_seconds"] for t in transitions} == {
        ("neutre", "joyeux"): 50,
        ("joyeux", "neutre"): 91,
    }
    assert all(type(t["avg_duration_seconds"]) is int for t in transitions)
    stored = EmotionTransition.objects.filter(subject__key="alice").values_list("avg_duration_seconds", flat=True)
    assert all(type(value) is int for value in stored)


def test_traits_move_every_update_frequency_interactions(admin_api, agent_api, alice):
    personality = {**alice["personality"], "update_frequency": 3}
    admin_api.post("/memory/subjects/alice/import", {"personality": personality})
    first = agent_api.post("/memory/subjects/alice/interactions", {"count": 2, "feedback": {"humour": 0.05}}).json()
    assert first["updated"] is False
    assert first["traits"]["humour"] == 0.54
    laughed = {"count": 1, "feedback": {"humour": 0.05, "patience": 0.5}, "reason": "user laughed"}
    second = agent_api.post("/memory/subjects/alice/interactions", laughed).json()
    assert second["updated"] is True
    assert second["traits"]["humour"] == 0.64
    assert second["traits"]["patience"] == 1.0
    assert second["changes"] == {"humour": "+0.10", "patience": "+0.25"}
    history = admin_api.get("/memory/subjects/alice/export").json()["personality"]["trait_history"]
    assert history[-1]["reason"] == "Updated after 3 interactions (user laughed)"
    assert history[-1]["interactions_count"] == 3


def test_a_subject_key_must_be_a_slug_whichever_way_it_is_imported(admin_api, alice, tmp_path):
    from django.core.management import CommandError, call_command

    response = admin_api.post("/memory/subjects/al%20ice/import", {"facts": alice["facts"]})
    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["path", "subject"]
    (tmp_path / "facts.json").write_text(json.dumps(alice["facts"]), encoding="utf-8")
    with pytest.raises(CommandError, match="not a subject key"):
        call_command("import_subject_memory", str(tmp_path), subject="alice/..")
    assert not Subject.objects.exists()


def test_the_command_imports_a_directory_of_seed_documents(tmp_path):
    from io import StringIO

    from django.core.management import CommandError, call_command

    out = StringIO()
    call_command("import_subject_memory", str(ALICE), subject="alice", stdout=out)
    assert "[subjects] alice: facts: 7 row(s)" in out.getvalue()
    assert Preference.objects.filter(subject__key="alice").count() == 3
    (tmp_path / "facts.json").write_text('{"version": "1.0", "last_updated": "x"}', encoding="utf-8")
    with pytest.raises(CommandError, match=r"facts\.last_updated"):
        call_command("import_subject_memory", str(tmp_path), subject="bob")
    with pytest.raises(CommandError, match="no seed-002 document"):
        call_command("import_subject_memory", str(tmp_path / "empty"), subject="bob")
    assert not Subject.objects.filter(key="bob").exists()
