"""Admin for agent memory: every table can be browsed, filtered and searched; none is edited here.

Memory is archived, never deleted, and every write has its service: learnings go through
``memory.learnings.create_learning`` (canonical tags hash, embedding), scopes through
``memory.lifecycle`` (rules, audit rows, vector indexes), watch notes through ``memory.notes``
(mirrors of files), scores through ``memory.scoring``. Editing a row by hand would bypass all of
that, so the admin only reads: no add, no change, no delete, no bulk delete action.
"""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse

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


class MemoryAdmin(admin.ModelAdmin):
    """Read-only and delete-free: memory rows change through their services only."""

    list_per_page = 50
    show_full_result_count = False  # no second COUNT(*) over a large table on each page

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def get_actions(self, request: HttpRequest) -> dict:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions


@admin.register(Learning)
class LearningAdmin(MemoryAdmin):
    list_display = ["id", "story", "gate", "domain", "project", "scope", "date_created", "short_text"]
    list_display_links = ["id", "story"]
    list_filter = ["scope", "domain", "project"]
    search_fields = ["text", "story"]
    date_hierarchy = "date_created"

    def view_on_site(self, obj: Learning) -> str:
        """The operator page with the score breakdown and the scope history."""
        return reverse("learning-detail", args=[obj.pk])

    @admin.display(description="Text")
    def short_text(self, obj: Learning) -> str:
        return obj.text if len(obj.text) <= 80 else obj.text[:79] + "…"


@admin.register(LearningInjection)
class LearningInjectionAdmin(MemoryAdmin):
    list_display = ["at", "learning_id", "story", "domain", "project"]
    list_filter = ["domain", "project"]
    search_fields = ["story", "learning__story"]
    date_hierarchy = "at"


@admin.register(GateResult)
class GateResultAdmin(MemoryAdmin):
    list_display = ["at", "story", "gate", "verdict"]
    list_filter = ["verdict", "gate"]
    search_fields = ["story"]
    date_hierarchy = "at"


@admin.register(ReuseScore)
class ReuseScoreAdmin(MemoryAdmin):
    list_display = [
        "story",
        "gate",
        "short_hash",
        "nb_injections",
        "nb_stories_gate8_go",
        "nb_domains",
        "reuse_score",
        "computed_at",
    ]
    list_filter = ["gate"]
    search_fields = ["story", "tags_hash"]
    ordering = ["-reuse_score"]

    @admin.display(description="Tags hash", ordering="tags_hash")
    def short_hash(self, obj: ReuseScore) -> str:
        return obj.tags_hash[:12]


@admin.register(PromotionProposal)
class PromotionProposalAdmin(MemoryAdmin):
    list_display = [
        "created_at",
        "learning_id",
        "from_scope",
        "to_scope",
        "reuse_score",
        "status",
        "decided_at",
        "decided_by",
    ]
    list_filter = ["status", "to_scope"]
    search_fields = ["learning__story", "decided_by"]
    date_hierarchy = "created_at"


@admin.register(VeilleNote)
class VeilleNoteAdmin(MemoryAdmin):
    list_display = ["date", "title", "verdict_veille", "impact_pv", "path"]
    list_filter = ["impact_pv", "verdict_veille"]
    search_fields = ["title", "summary", "path"]
    date_hierarchy = "date"


@admin.register(Clarification)
class ClarificationAdmin(MemoryAdmin):
    list_display = ["date", "story", "version", "question_idx", "domain", "project", "name"]
    list_filter = ["domain", "project"]
    search_fields = ["story", "name", "verbatim"]
    date_hierarchy = "date"


@admin.register(Embedding)
class EmbeddingAdmin(MemoryAdmin):
    """Vectors are hundreds of floats: never loaded for the list, never shown on a page."""

    list_display = ["kind", "object_id", "model", "dimension", "active", "created_at"]
    list_filter = ["kind", "model", "active"]
    search_fields = ["model", "text_sha256"]
    fields = ["kind", "object_id", "model", "dimension", "text_sha256", "active", "created_at"]
    readonly_fields = ["created_at"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Embedding]:
        return super().get_queryset(request).defer("embedding")


@admin.register(ScoringRun)
class ScoringRunAdmin(MemoryAdmin):
    list_display = ["started_at", "mode", "finished_at", "keys_updated", "last_injection_id", "last_gate_result_id"]
    list_filter = ["mode"]
    date_hierarchy = "started_at"
