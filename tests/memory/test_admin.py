"""Memory admin: every table is listed, filtered and searched; nothing is added, edited or
deleted by hand (memory is archived, never deleted), and vectors never reach a page."""

from __future__ import annotations

from html import unescape

import pytest
from django.urls import reverse

from governance.kernel.principals import SYSTEM
from memory import clarifications, lifecycle, scoring, watch_notes
from memory.learnings import create_learning
from memory.models import (
    Clarification,
    Embedding,
    GateResult,
    Learning,
    LearningInjection,
    PromotionProposal,
    ReuseScore,
    ScoringRun,
    VeilleNote,
)
from tests.factories.governance import UserFactory
from tests.factories.memory import EmbeddingFactory, GateResultFactory, LearningInjectionFactory

MODELS = {
    "learning": Learning,
    "learninginjection": LearningInjection,
    "gateresult": GateResult,
    "reusescore": ReuseScore,
    "promotionproposal": PromotionProposal,
    "veillenote": VeilleNote,
    "clarification": Clarification,
    "embedding": Embedding,
    "scoringrun": ScoringRun,
}
NOTE = "---\ntitle: {title}\ndate: 2026-11-01\nverdict_veille: {verdict}\nimpact_pv: {impact}\n---\n\nBody.\n"
VECTOR = [0.123456, 0.654321, 0.5]


def page(response) -> str:
    assert response.status_code == 200
    return unescape(response.content.decode())


def changelist(client, model: str, params: dict | None = None) -> str:
    return page(client.get(reverse(f"admin:memory_{model}_changelist"), params or {}))


def learning(story: str, **kw) -> Learning:
    return create_learning(
        actor=SYSTEM,
        story=story,
        gate=kw.pop("gate", 3),
        domain=kw.pop("domain", "seo"),
        project=kw.pop("project", "shop"),
        tags=kw.pop("tags", ["#api"]),
        text=kw.pop("text", f"Lesson of {story}"),
    )


@pytest.fixture
def memory(db) -> dict[str, object]:
    """One row or more of every memory table, written through the services."""
    seo = learning("PD-1", text="Canonical URLs point to page one")
    rag = learning("PD-2", domain="rag", project="search", text="Chunk on headings first")
    LearningInjectionFactory(learning=seo, story="PD-9")
    GateResultFactory(story="PD-9", gate=8, verdict="GO")
    scoring.compute_reuse_scores(full=True)
    lifecycle.propose_promotions(mode="review")
    watch_notes.add_note(NOTE.format(title="Strong signal", verdict="signal", impact="fort"), "a.md", actor=SYSTEM)
    watch_notes.add_note(NOTE.format(title="Mere noise", verdict="bruit", impact="aucun"), "b.md", actor=SYSTEM)
    clarifications.persist_clarifications(
        story="PD-1", domain="seo", project="shop", answers=["One.", "Two.", "Three.", "Four."], actor=SYSTEM
    )
    vector = EmbeddingFactory(kind="learning", object_id=seo.pk, model="test-model", embedding=VECTOR)
    return {"seo": seo, "rag": rag, "embedding": vector, "proposal": PromotionProposal.objects.get()}


def any_row(model: str) -> object:
    return MODELS[model].objects.first()


@pytest.mark.parametrize("model", list(MODELS))
def test_every_memory_table_is_listed_and_its_rows_open(admin_client, memory, model):
    html = changelist(admin_client, model)
    row = any_row(model)

    assert row is not None
    assert reverse(f"admin:memory_{model}_change", args=[row.pk]) in html
    assert page(admin_client.get(reverse(f"admin:memory_{model}_change", args=[row.pk])))


@pytest.mark.parametrize("model", list(MODELS))
def test_nothing_in_memory_can_be_added_changed_or_deleted(admin_client, memory, model):
    row = any_row(model)
    html = changelist(admin_client, model)

    assert "delete_selected" not in html
    assert reverse(f"admin:memory_{model}_add") not in html
    assert admin_client.get(reverse(f"admin:memory_{model}_add")).status_code == 403
    delete = reverse(f"admin:memory_{model}_delete", args=[row.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    assert MODELS[model].objects.filter(pk=row.pk).exists()
    change = page(admin_client.get(reverse(f"admin:memory_{model}_change", args=[row.pk])))
    assert 'name="_save"' not in change
    assert delete not in change


def test_the_learning_list_shows_its_key_columns(admin_client, memory):
    html = changelist(admin_client, "learning")

    for header in ("Story", "Gate", "Domain", "Project", "Scope", "Date created", "Text"):
        assert f">{header}</a>" in html or f">{header}</span>" in html, header
    assert "Canonical URLs point to page one" in html


@pytest.mark.parametrize(
    ("params", "shown", "hidden"),
    [
        ({"scope__exact": "story"}, "Canonical URLs", None),
        ({"scope__exact": "global"}, None, "Canonical URLs"),
        ({"domain__exact": "rag"}, "Chunk on headings", "Canonical URLs"),
        ({"project__exact": "shop"}, "Canonical URLs", "Chunk on headings"),
        ({"q": "headings"}, "Chunk on headings", "Canonical URLs"),
        ({"q": "PD-1"}, "Canonical URLs", "Chunk on headings"),
    ],
)
def test_learnings_are_filtered_by_scope_domain_project_and_searched(admin_client, memory, params, shown, hidden):
    html = changelist(admin_client, "learning", params)

    if shown:
        assert shown in html
    if hidden:
        assert hidden not in html


def test_a_learning_links_to_its_operator_page(admin_client, memory):
    seo = memory["seo"]
    html = page(admin_client.get(reverse("admin:memory_learning_change", args=[seo.pk])))

    assert f'href="{reverse("memory:learning-detail", args=[seo.pk])}"' in html


def test_proposals_are_filtered_by_status(admin_client, memory):
    proposal = memory["proposal"]
    url = reverse("admin:memory_promotionproposal_change", args=[proposal.pk])

    assert url in changelist(admin_client, "promotionproposal", {"status__exact": "proposed"})
    assert url not in changelist(admin_client, "promotionproposal", {"status__exact": "applied"})


@pytest.mark.parametrize(
    ("params", "shown", "hidden"),
    [
        ({"impact_pv__exact": "fort"}, "Strong signal", "Mere noise"),
        ({"verdict_veille__exact": "bruit"}, "Mere noise", "Strong signal"),
    ],
)
def test_watch_notes_are_filtered_by_impact_and_verdict(admin_client, memory, params, shown, hidden):
    html = changelist(admin_client, "veillenote", params)

    assert shown in html
    assert hidden not in html


def test_vectors_never_reach_a_page(admin_client, memory):
    vector = memory["embedding"]
    listing = changelist(admin_client, "embedding")
    detail = page(admin_client.get(reverse("admin:memory_embedding_change", args=[vector.pk])))

    assert "test-model" in listing
    for html in (listing, detail):
        assert "0.123456" not in html
        assert "0.654321" not in html


def test_a_staff_viewer_browses_memory_without_any_write(client, memory):
    staff = UserFactory(username="vera", roles=["Viewer"])
    staff.is_staff = True
    staff.save()
    client.force_login(staff)

    html = changelist(client, "learning")

    assert "Canonical URLs point to page one" in html
    assert "delete_selected" not in html
    assert (
        client.post(reverse("admin:memory_learning_delete", args=[memory["seo"].pk]), {"post": "yes"}).status_code
        == 403
    )
