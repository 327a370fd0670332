"""Operators correct memory (privacy): an erased learning, watch note or clarification is gone from
the database and from searches, a redacted one keeps its row but no content and no vector; the
audit trail says who did it to which id, never what it said. Agents, reviewers and the system are
refused, and a refusal writes nothing. The admin offers the same, after a confirmation page."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from governance.kernel.exceptions import Forbidden, NotFound
from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM, Principal
from governance.reviews.models import ReviewItem
from memory import clarifications, indexing, lifecycle, privacy, scoring, search, transfer, watch_notes
from memory.embeddings import get_backend
from memory.learnings import create_learning
from memory.models import (
    Clarification,
    Embedding,
    ErasedLearning,
    Learning,
    LearningInjection,
    PromotionProposal,
    ReuseScore,
    VeilleNote,
)
from tests.factories.memory import LearningInjectionFactory

pytestmark = pytest.mark.django_db

SECRET = "Alice Martin's phone is 06 12 34 56 78"
NOTE = "---\ntitle: {title}\ndate: 2026-11-01\nverdict_veille: signal\nimpact_pv: fort\n---\n\n{body}\n"


@pytest.fixture
def hashing(settings):
    settings.DEBUG = True
    settings.EMBEDDING_BACKEND = "hashing"
    settings.EMBEDDING_DIMENSION = 64
    return get_backend()


@pytest.fixture
def operator(admin_operator) -> Principal:
    return Principal(user=admin_operator)


def embedded(kind: str, backend) -> None:
    for name in ("learning", "veille", "clarification"):
        if kind in (name, "all"):
            indexing.embed(name, indexing.missing(name, backend.model), backend=backend)


@pytest.fixture
def rows(hashing) -> dict[str, Any]:
    """A learning, a watch note and a clarification answer holding the same personal detail,
    each embedded, plus a second learning of the same score key that stays."""
    secret = create_learning(
        actor=SYSTEM, story="PD-1", gate=3, domain="seo", project="shop", tags=["#crm"], text=SECRET
    )
    twin = create_learning(
        actor=SYSTEM, story="PD-1", gate=3, domain="seo", project="shop", tags=["#crm"], text="Call the CRM API"
    )
    for learning, story in ((secret, "PD-7"), (secret, "PD-8"), (twin, "PD-9")):
        LearningInjectionFactory(learning=learning, story=story, domain="seo")
    scoring.compute_reuse_scores(full=True)
    lifecycle.propose_promotions(mode="review")
    note, _ = watch_notes.add_note(NOTE.format(title=SECRET, body=SECRET), None, actor=SYSTEM)
    clarifications.persist_clarifications(
        story="PD-1", domain="seo", project="shop", answers=[SECRET, "Two.", "Three.", "Four."], actor=SYSTEM
    )
    answer = Clarification.objects.get(question_idx=1)
    embedded("all", hashing)
    return {"learning": secret, "twin": twin, "veille": note, "clarification": answer}


def found(kind: str, operator: Principal) -> list[str]:
    return [hit["text"] for hit in search.search_memory(operator, q=SECRET, kind=kind, k=10)]


def score() -> ReuseScore:
    return ReuseScore.objects.get(story="PD-1", gate=3)


def audit_text() -> str:
    return " ".join(f"{e.actor} {e.action} {e.target_id} {e.data}" for e in AuditEvent.objects.all())


@pytest.mark.parametrize("kind", ["learning", "veille", "clarification"])
def test_an_erased_row_is_gone_from_the_database_and_from_searches(rows, operator, kind):
    assert SECRET in " ".join(found(kind, operator))
    target = rows[kind]

    privacy.erase(kind, target.pk, actor=operator)

    assert not type(target).objects.filter(pk=target.pk).exists()
    assert not Embedding.objects.filter(kind=kind, object_id=target.pk).exists()
    assert SECRET not in " ".join(found(kind, operator))
    event = AuditEvent.objects.get(action=f"{kind}.erased")
    assert (event.actor, event.target_id, event.data) == ("user:alice", str(target.pk), {})
    assert event.at > timezone.now() - timedelta(minutes=1)


def test_erasing_a_learning_takes_its_injections_and_proposals_and_rescores_its_key(rows, operator):
    assert (score().nb_injections, score().reuse_score) == (3, Decimal("1.4"))
    item = ReviewItem.objects.get(kind=lifecycle.REVIEW_KIND, payload__learning=rows["learning"].pk)
    assert item.payload["text"] == SECRET

    privacy.erase("learning", rows["learning"].pk, actor=operator)

    assert not LearningInjection.objects.filter(learning_id=rows["learning"].pk).exists()
    assert not PromotionProposal.objects.filter(learning_id=rows["learning"].pk).exists()
    assert (score().nb_injections, score().reuse_score) == (1, Decimal("0.6"))
    item.refresh_from_db()
    assert item.payload["text"] == privacy.REDACTED
    assert scoring.compute_reuse_scores(full=True).corrections.total == 0  # the next full run agrees


def test_a_key_left_without_injections_loses_its_score_row(rows, operator):
    privacy.erase("learning", rows["learning"].pk, actor=operator)
    privacy.erase("learning", rows["twin"].pk, actor=operator)

    assert not ReuseScore.objects.filter(story="PD-1").exists()


@pytest.mark.parametrize("kind", ["learning", "veille", "clarification"])
def test_a_redacted_row_keeps_no_content_no_vector_and_is_never_embedded_again(rows, operator, hashing, kind):
    target = rows[kind]

    privacy.redact(kind, target.pk, actor=operator)
    embedded("all", hashing)  # the hourly catch-up

    target.refresh_from_db()
    assert SECRET not in str(vars(target))
    assert target.redacted_at is not None
    assert not Embedding.objects.filter(kind=kind, object_id=target.pk).exists()
    assert SECRET not in " ".join(found(kind, operator))
    assert privacy.REDACTED not in " ".join(found(kind, operator))
    event = AuditEvent.objects.get(action=f"{kind}.redacted")
    assert (event.actor, event.target_id, event.data) == ("user:alice", str(target.pk), {})
    assert SECRET not in audit_text()


def test_a_redacted_learning_keeps_its_tags_hash_and_score(rows, operator):
    before = (rows["learning"].tags, rows["learning"].tags_hash, score().reuse_score)

    privacy.redact("learning", rows["learning"].pk, actor=operator)

    rows["learning"].refresh_from_db()
    assert (rows["learning"].tags, rows["learning"].tags_hash, score().reuse_score) == before
    assert scoring.compute_reuse_scores(full=True).corrections.total == 0


def test_a_vector_computed_while_its_row_was_redacted_is_not_written(rows, operator, hashing):
    learning = rows["learning"]
    Embedding.objects.filter(kind="learning", object_id=learning.pk).delete()

    class RedactingBackend:
        """Redacts the row while its vector is being computed, as an operator in another tab would."""

        model, dimension = hashing.model, hashing.dimension

        def embed(self, texts: list[str]) -> list[list[float]]:
            privacy.redact("learning", learning.pk, actor=operator)
            return hashing.embed(texts)

    assert indexing.embed("learning", [learning.pk], backend=RedactingBackend()) == 0
    assert not Embedding.objects.filter(kind="learning", object_id=learning.pk).exists()


@pytest.fixture(params=["agent", "reviewer", "viewer", "system"])
def refused(request, agent, reviewer, viewer) -> Principal:
    return {
        "agent": Principal(agent=agent),
        "reviewer": Principal(user=reviewer),
        "viewer": Principal(user=viewer),
        "system": SYSTEM,
    }[request.param]


@pytest.mark.parametrize("kind", ["learning", "veille", "clarification"])
@pytest.mark.parametrize("call", [privacy.erase, privacy.redact])
def test_agents_reviewers_viewers_and_the_system_are_refused_and_nothing_is_written(rows, refused, kind, call):
    events = AuditEvent.objects.count()

    with pytest.raises(Forbidden):
        call(kind, rows[kind].pk, actor=refused)

    target = type(rows[kind]).objects.get(pk=rows[kind].pk)
    assert SECRET in str(vars(target))
    assert target.redacted_at is None
    assert Embedding.objects.filter(kind=kind, object_id=target.pk).exists()
    assert AuditEvent.objects.count() == events


@pytest.mark.parametrize("call", [lifecycle.archive, lifecycle.restore, lifecycle.demote])
def test_moving_a_learning_by_hand_is_refused_to_others_too(rows, refused, call):
    with pytest.raises(Forbidden):
        call(rows["learning"].pk, actor=refused)

    assert Learning.objects.get(pk=rows["learning"].pk).scope == "story"


def test_an_unknown_id_is_not_found(rows, operator):
    with pytest.raises(NotFound):
        privacy.erase("veille", 10**9, actor=operator)


def test_a_redacted_watch_note_loses_its_path_in_the_row_and_in_the_audit_trail(rows, operator):
    note = rows["veille"]
    assert "alice-martin" in note.path

    privacy.redact("veille", note.pk, actor=operator)

    assert "alice-martin" not in str(vars(VeilleNote.objects.get(pk=note.pk)))
    assert "alice-martin" not in audit_text().lower()


# --- the admin -------------------------------------------------------------------------------------


def changelist(kind: str) -> str:
    return reverse(f"admin:memory_{kind}_changelist")


def log_in(client, user) -> None:
    """Into the admin: a member of the role's group with staff status."""
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    client.force_login(user)


MODEL_NAMES = {"learning": "learning", "veille": "veillenote", "clarification": "clarification"}


@pytest.mark.parametrize("kind", ["learning", "veille", "clarification"])
def test_the_admin_asks_before_erasing_then_erases(client, admin_operator, rows, kind):
    log_in(client, admin_operator)
    url, target = changelist(MODEL_NAMES[kind]), rows[kind]
    form = {"action": "erase_selected", "_selected_action": [target.pk]}

    asked = client.post(url, form)

    assert asked.status_code == 200
    assert "This cannot be undone" in asked.content.decode()
    assert type(target).objects.filter(pk=target.pk).exists()

    done = client.post(url, {**form, "confirmed": "yes"}, follow=True)

    assert "Erased 1" in done.content.decode()
    assert not type(target).objects.filter(pk=target.pk).exists()
    assert AuditEvent.objects.filter(action=f"{kind}.erased", actor="user:alice").exists()


def test_the_admin_redacts_after_confirmation(client, admin_operator, rows):
    log_in(client, admin_operator)
    form = {"action": "redact_selected", "_selected_action": [rows["learning"].pk], "confirmed": "yes"}

    client.post(changelist("learning"), form)

    assert Learning.objects.get(pk=rows["learning"].pk).text == privacy.REDACTED


def test_a_reviewer_is_offered_no_correction_and_cannot_post_one(client, reviewer, rows):
    log_in(client, reviewer)

    html = client.get(changelist("learning")).content.decode()
    client.post(
        changelist("learning"),
        {"action": "erase_selected", "_selected_action": [rows["learning"].pk], "confirmed": "yes"},
    )

    assert "erase_selected" not in html
    assert "redact_selected" not in html
    assert "demote_selected" not in html
    assert Learning.objects.filter(pk=rows["learning"].pk, text=SECRET).exists()


def test_archive_restore_and_demote_from_the_admin(client, admin_operator, rows):
    log_in(client, admin_operator)
    learning = rows["learning"]
    Learning.objects.filter(pk=learning.pk).update(scope="global")

    def act(action: str) -> tuple[str, str]:
        response = client.post(
            changelist("learning"), {"action": action, "_selected_action": [learning.pk]}, follow=True
        )
        return Learning.objects.get(pk=learning.pk).scope, response.content.decode()

    assert act("demote_selected")[0] == "domain"
    assert act("demote_selected")[0] == "story"
    scope_, html = act("demote_selected")
    assert scope_ == "story"
    assert "cannot be demoted further" in html
    assert act("archive_selected")[0] == "archived"
    assert not Embedding.objects.filter(kind="learning", object_id=learning.pk, active=True).exists()
    assert act("restore_selected")[0] == "story"
    assert Embedding.objects.filter(kind="learning", object_id=learning.pk, active=True).exists()
    actions = list(
        AuditEvent.objects.filter(target_id=str(learning.pk), actor="user:alice")
        .order_by("at", "pk")
        .values_list("action", "data__previous", "data__scope")
    )
    assert actions == [
        ("learning.demoted", "global", "domain"),
        ("learning.demoted", "domain", "story"),
        ("learning.archived", "story", "archived"),
        ("learning.restored", "archived", "story"),
    ]


def test_a_restored_learning_gets_another_eviction_period(rows, operator):
    learning = rows["twin"]
    LearningInjection.objects.filter(learning=learning).delete()
    Learning.objects.filter(pk=learning.pk).update(date_created=timezone.localdate() - timedelta(days=90))
    assert lifecycle.evict().archived == 1

    lifecycle.restore(learning.pk, actor=operator)

    assert lifecycle.evict().archived == 0
    assert lifecycle.evict(today=timezone.localdate() + timedelta(days=57)).archived == 1


@pytest.mark.parametrize("call", [privacy.erase, privacy.redact])
def test_importing_the_seed_file_again_does_not_bring_an_erased_or_redacted_learning_back(
    rows, operator, call, tmp_path
):
    line = {"story": "PD-1", "gate": 3, "domain": "seo", "project": "shop", "tags": ["#crm"], "text": SECRET}
    path = tmp_path / "learnings.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    call("learning", rows["learning"].pk, actor=operator)
    warnings: list[str] = []

    report = transfer.import_learnings(transfer.read_lines(path), source=str(path), actor=SYSTEM, warn=warnings.append)

    assert (report.created, report.skipped) == (0, 1)
    assert warnings == ["[import] skipped: line 1: erased or redacted by an operator"]
    assert not Learning.objects.filter(text=SECRET).exists()
    assert SECRET not in str(list(ErasedLearning.objects.values()))
