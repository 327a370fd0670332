"""Admin for agent memory: every table can be browsed, filtered and searched; none is edited here
but the realistic-transition matrix of subjects' emotions, which operators tune.

Every write has its service: learnings go through
``memory.learnings.create_learning`` (canonical tags hash, embedding), scopes through
``memory.lifecycle`` (rules, audit rows, vector indexes), watch notes through ``memory.watch_notes``
(mirrors of files), scores through ``memory.scoring``. Editing a row by hand would bypass all of
that, so the admin only reads: no add, no change, no delete, no bulk delete action. What an
operator may correct goes through actions calling the services: erase or redact a learning, a
watch note or a clarification (``memory.privacy``, after a confirmation page), archive, restore or
demote a learning (``memory.lifecycle``). Each action is offered only to holders of the permission
its service checks (delete for erasing, change for the others).

Subjects (seed 002) follow the same rule: imports replace documents through
``memory.subjects.services.import_documents``, facts are corrected on the subject's page through
``subjects.correct_fact`` (audit row, searchable memory rewritten and re-embedded), and a subject is
erased through ``subjects.erase`` (vectors and audit rows naming it go too), never by a cascade
from the admin. The transition matrix has no service: it is plain data that ``memory.subjects.emotions``
reads on every recorded emotion, so it is edited here, and each edit leaves an audit row.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import reverse

from governance.kernel.access import signed_in
from governance.kernel.admin import ReadOnlyAdmin
from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import DomainError
from governance.kernel.principals import Principal
from governance.kernel.services import record
from memory import holds, lifecycle, privacy, reports
from memory.models import (
    Clarification,
    Conversation,
    Embedding,
    EmotionEvent,
    EmotionState,
    EmotionTransition,
    ErasedLearning,
    GateResult,
    Learning,
    LearningInjection,
    LifeEvent,
    PersonalityState,
    Preference,
    ProfileFact,
    PromotionProposal,
    Relationship,
    ReuseScore,
    ScoringRun,
    Subject,
    SubjectCounter,
    SubjectMemory,
    TraitSnapshot,
    TransitionProbability,
    VeilleNote,
)
from memory.subjects.access import restrict
from memory.subjects.emotions import THRESHOLD


class MemoryAdmin(ReadOnlyAdmin):
    """Read-only and delete-free: memory rows change through their services only."""

    list_per_page = 50
    show_full_result_count = False  # no second COUNT(*) over a large table on each page

    def get_actions(self, request: HttpRequest) -> dict:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions


class CorrectionActions(MemoryAdmin):
    """Erase and redact, each after a confirmation page, through memory.privacy; ``kind`` names
    the privacy kind of the model."""

    kind = ""
    actions = ["erase_selected", "redact_selected"]

    def _perm(self, request: HttpRequest, action: str) -> bool:
        return request.user.has_perm(f"memory.{action}_{self.model._meta.model_name}")

    def has_erase_permission(self, request: HttpRequest) -> bool:
        return self._perm(request, "delete")

    def has_redact_permission(self, request: HttpRequest) -> bool:
        return self._perm(request, "change")

    def _apply(
        self, request: HttpRequest, queryset: QuerySet, done: str, call: Callable[[int, Principal], object]
    ) -> None:
        """Call the service once per row as the logged-in operator (the admin lets no one else in),
        each its own transaction; a refusal is reported and the other rows go on."""
        actor = Principal(user=cast(AbstractBaseUser, request.user))
        count, refused = 0, []
        for pk in queryset.values_list("pk", flat=True):
            try:
                call(pk, actor)
            except DomainError as exc:
                refused.append(f"#{pk}: {exc.detail}")
            else:
                count += 1
        self.message_user(request, f"{done} {count} {self.model._meta.verbose_name_plural}.", messages.SUCCESS)
        for reason in refused:
            self.message_user(request, reason, messages.WARNING)

    def _confirmed(
        self, request: HttpRequest, queryset: QuerySet, action: str, verb: str, consequence: str
    ) -> TemplateResponse | None:
        """None once the operator confirmed; otherwise the page that asks."""
        if request.POST.get("confirmed") == "yes":
            return None
        opts = self.model._meta
        return TemplateResponse(
            request,
            "admin/memory/confirm_correction.html",
            {
                **self.admin_site.each_context(request),
                "opts": opts,
                "title": f"{verb.capitalize()} {opts.verbose_name_plural}",
                "objects": list(queryset),
                "action": action,
                "verb": verb,
                "consequence": consequence,
                "changelist": f"admin:{opts.app_label}_{opts.model_name}_changelist",
            },
        )

    @admin.action(description="Erase selected rows for good (privacy)", permissions=["erase"])
    def erase_selected(self, request: HttpRequest, queryset: QuerySet) -> TemplateResponse | None:
        ask = self._confirmed(
            request,
            queryset,
            "erase_selected",
            "erase",
            "Their content, vectors and (learnings) injections are deleted for good; the audit trail keeps "
            "who erased which id, never the content. This cannot be undone.",
        )
        if ask is None:
            self._apply(request, queryset, "Erased", lambda pk, actor: privacy.erase(self.kind, pk, actor=actor))
        return ask

    @admin.action(description="Redact selected rows (privacy)", permissions=["redact"])
    def redact_selected(self, request: HttpRequest, queryset: QuerySet) -> TemplateResponse | None:
        ask = self._confirmed(
            request,
            queryset,
            "redact_selected",
            "redact",
            f"Their text becomes {privacy.REDACTED} and their vectors are deleted: they no longer show in any "
            "search. Tags and scores stay. This cannot be undone.",
        )
        if ask is None:
            self._apply(request, queryset, "Redacted", lambda pk, actor: privacy.redact(self.kind, pk, actor=actor))
        return ask


class HeldActions(CorrectionActions):
    """Quarantine and release (memory/holds.py): hold every item the selected rows' authors wrote,
    at once, or let the selected held items be served again."""

    held_actions = ["quarantine_authors", "release_selected"]

    def has_hold_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm("memory.change_learning"))

    @admin.display(description="held", boolean=True)
    def held(self, obj: Learning | VeilleNote) -> bool:
        return obj.held_at is not None

    @admin.action(
        description="Quarantine their authors' items (hold everything each author wrote)", permissions=["hold"]
    )
    def quarantine_authors(self, request: HttpRequest, queryset: QuerySet) -> None:
        actor = Principal(user=cast(AbstractBaseUser, request.user))
        authors = sorted({pk for pk in queryset.values_list("author_id", flat=True) if pk is not None})
        held = [holds.quarantine_author(pk, actor=actor) for pk in authors]
        counts = ", ".join(f"{sum(c[kind] for c in held)} {kind}" for kind in holds.HELD_KINDS)
        self.message_user(request, f"Quarantined {len(authors)} author(s): held {counts}.", messages.SUCCESS)

    @admin.action(description="Release selected held items", permissions=["hold"])
    def release_selected(self, request: HttpRequest, queryset: QuerySet) -> None:
        released = holds.release_items(queryset, actor=Principal(user=cast(AbstractBaseUser, request.user)))
        self.message_user(request, f"Released {released} held item(s).", messages.SUCCESS)


@admin.register(Learning)
class LearningAdmin(HeldActions):
    kind = "learning"
    actions = [
        *CorrectionActions.actions,
        "archive_selected",
        "restore_selected",
        "demote_selected",
        *HeldActions.held_actions,
    ]

    list_display = ["id", "story", "gate", "domain", "project", "scope", "date_created", "author", "held", "short_text"]
    list_display_links = ["id", "story"]
    list_filter = ["scope", ("held_at", admin.EmptyFieldListFilter), "domain", "project"]
    list_select_related = ["author"]
    search_fields = ["text", "story"]
    date_hierarchy = "date_created"

    def view_on_site(self, obj: Learning) -> str:
        """The operator page with the score breakdown and the scope history."""
        return reverse("memory:learning-detail", args=[obj.pk])

    @admin.display(description="Text")
    def short_text(self, obj: Learning) -> str:
        return obj.text if len(obj.text) <= 80 else obj.text[:79] + "…"

    def has_lifecycle_permission(self, request: HttpRequest) -> bool:
        """Archive, restore and demote: the permission memory.lifecycle checks."""
        return self._perm(request, "change")

    @admin.action(description="Archive selected learnings", permissions=["lifecycle"])
    def archive_selected(self, request: HttpRequest, queryset: QuerySet[Learning]) -> None:
        self._apply(request, queryset, "Archived", lambda pk, actor: lifecycle.archive(pk, actor=actor))

    @admin.action(description="Restore selected learnings from the archive (to story)", permissions=["lifecycle"])
    def restore_selected(self, request: HttpRequest, queryset: QuerySet[Learning]) -> None:
        self._apply(request, queryset, "Restored", lambda pk, actor: lifecycle.restore(pk, actor=actor))

    @admin.action(description="Demote selected learnings one scope down", permissions=["lifecycle"])
    def demote_selected(self, request: HttpRequest, queryset: QuerySet[Learning]) -> None:
        self._apply(request, queryset, "Demoted", lambda pk, actor: lifecycle.demote(pk, actor=actor))


@admin.register(LearningInjection)
class LearningInjectionAdmin(MemoryAdmin):
    list_display = ["at", "learning_id", "story", "domain", "project"]
    list_filter = ["domain", "project"]
    search_fields = ["story", "learning__story"]
    date_hierarchy = "at"


@admin.register(GateResult)
class GateResultAdmin(MemoryAdmin):
    list_display = ["at", "story", "gate", "verdict", "author"]
    list_select_related = ["author"]
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


class VeilleTagFilter(admin.SimpleListFilter):
    """Watch notes by one of their tags (a JSON list, so no column for the admin's own filters):
    every tag the notes carry is offered, as their authors wrote it."""

    title = "tag"
    parameter_name = "tag"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [(item.tag, f"{item.tag} ({item.count})") for item in reports.note_tags(limit=None)]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        return queryset.filter(tags__contains=[value]) if value else queryset


@admin.register(VeilleNote)
class VeilleNoteAdmin(HeldActions):
    kind = "veille"
    actions = [*CorrectionActions.actions, *HeldActions.held_actions]
    list_display = ["date", "title", "verdict_veille", "impact_pv", "tag_list", "path", "author", "held"]
    list_filter = ["impact_pv", "verdict_veille", ("held_at", admin.EmptyFieldListFilter), VeilleTagFilter]
    list_select_related = ["author"]

    @admin.display(description="tags")
    def tag_list(self, obj: VeilleNote) -> str:
        return ", ".join(obj.tags)

    search_fields = ["title", "summary", "path"]
    date_hierarchy = "date"


@admin.register(Clarification)
class ClarificationAdmin(CorrectionActions):
    kind = "clarification"
    list_display = ["date", "story", "version", "question_idx", "domain", "project", "name", "author"]
    list_select_related = ["author"]
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


@admin.register(ErasedLearning)
class ErasedLearningAdmin(MemoryAdmin):
    """What stops an erased or redacted learning from coming back with an import: hashes only."""

    list_display = ["at", "digest"]
    date_hierarchy = "at"


@admin.register(ScoringRun)
class ScoringRunAdmin(MemoryAdmin):
    list_display = [
        "started_at",
        "mode",
        "finished_at",
        "keys_updated",
        "keys_corrected",
        "keys_created",
        "keys_removed",
        "last_injection_id",
        "last_gate_result_id",
    ]
    list_filter = ["mode"]
    date_hierarchy = "started_at"


# --- Per-subject conversational memory (seed 002) ------------------------------------------------


def _short(text: str, size: int = 80) -> str:
    return text if len(text) <= size else text[: size - 1] + "…"


class SubjectRowAdmin(MemoryAdmin):
    """A row of one subject: "View on site" opens the subject's page, where facts are corrected."""

    list_select_related = ["subject"]
    anchor = ""

    def view_on_site(self, obj: object) -> str:
        url = reverse("memory:subject-detail", args=[obj.subject.key])
        return f"{url}#{self.anchor}" if self.anchor else url


@admin.register(Subject)
class SubjectAdmin(MemoryAdmin):
    """Read-only but for one field: which agents may reach the subject, saved through the service
    (with its audit row), never by the admin's own save."""

    list_display = ["key", "created_at", "documents_imported", "restricted_to"]
    search_fields = ["key"]
    date_hierarchy = "created_at"
    fields = ["key", "created_at", "allowed_agents"]
    readonly_fields = ["key", "created_at"]
    filter_horizontal = ["allowed_agents"]

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return request.user.has_perm("memory.change_subject")

    def save_model(self, request: HttpRequest, obj: Subject, form: object, change: bool) -> None:
        """Nothing of the subject row itself changes here; ``save_related`` applies the restriction."""

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        agents = form.cleaned_data["allowed_agents"]
        restrict(form.instance, [agent.agent_id for agent in agents], actor=signed_in(request))

    @admin.display(description="Restricted to")
    def restricted_to(self, obj: Subject) -> str:
        return ", ".join(agent.agent_id for agent in obj.allowed_agents.all()) or "every agent with long-term memory"

    def get_queryset(self, request: HttpRequest) -> QuerySet[Subject]:
        return super().get_queryset(request).prefetch_related("allowed_agents")

    def view_on_site(self, obj: Subject) -> str:
        return reverse("memory:subject-detail", args=[obj.key])

    @admin.display(description="Documents")
    def documents_imported(self, obj: Subject) -> str:
        return ", ".join(sorted(obj.documents)) or "—"


@admin.register(SubjectCounter)
class SubjectCounterAdmin(SubjectRowAdmin):
    list_display = ["subject", "prefix", "last"]
    list_filter = ["prefix"]
    search_fields = ["subject__key"]


@admin.register(Conversation)
class ConversationAdmin(SubjectRowAdmin):
    anchor = "conversations-heading"
    list_display = [
        "conv_id",
        "subject",
        "start_timestamp",
        "end_timestamp",
        "message_count",
        "overall_sentiment",
        "sentiment_score",
        "dominant_emotion",
    ]
    list_filter = ["overall_sentiment", "dominant_emotion"]
    search_fields = ["subject__key", "conv_id", "summary"]
    date_hierarchy = "start_timestamp"


@admin.register(ProfileFact)
class ProfileFactAdmin(SubjectRowAdmin):
    anchor = "facts-profile"
    list_display = ["subject", "field", "value", "confidence", "extracted_from", "timestamp"]
    list_filter = ["field"]
    search_fields = ["subject__key", "value"]


@admin.register(Preference)
class PreferenceAdmin(SubjectRowAdmin):
    anchor = "facts-preference"
    list_display = ["pref_id", "subject", "category", "item", "sentiment", "confidence", "extracted_from", "timestamp"]
    list_filter = ["sentiment", "category"]
    search_fields = ["subject__key", "pref_id", "category", "item", "context"]
    date_hierarchy = "timestamp"


@admin.register(LifeEvent)
class LifeEventAdmin(SubjectRowAdmin):
    anchor = "facts-event"
    list_display = ["event_id", "subject", "timestamp", "short_description", "importance", "sentiment"]
    list_filter = ["sentiment"]
    search_fields = ["subject__key", "event_id", "description"]
    date_hierarchy = "timestamp"

    @admin.display(description="Description")
    def short_description(self, obj: LifeEvent) -> str:
        return _short(obj.description)


@admin.register(Relationship)
class RelationshipAdmin(SubjectRowAdmin):
    anchor = "facts-relationship"
    list_display = ["rel_id", "subject", "entity_1", "relation_type", "entity_2", "confidence", "extracted_from"]
    list_filter = ["relation_type"]
    search_fields = ["subject__key", "rel_id", "entity_1", "entity_2", "relation_type"]


@admin.register(SubjectMemory)
class SubjectMemoryAdmin(SubjectRowAdmin):
    """The searchable texts; their vectors are in Embedding (kind "subject")."""

    list_display = ["key", "subject", "type", "timestamp", "short_text"]
    list_filter = ["type"]
    search_fields = ["subject__key", "key", "text"]
    date_hierarchy = "timestamp"

    @admin.display(description="Text")
    def short_text(self, obj: SubjectMemory) -> str:
        return _short(obj.text)


@admin.register(PersonalityState)
class PersonalityStateAdmin(SubjectRowAdmin):
    anchor = "personality-heading"
    list_display = [
        "subject",
        "total_interactions",
        "interactions_since_update",
        "update_frequency",
        "last_trait_update",
        "last_updated",
    ]
    search_fields = ["subject__key"]


@admin.register(TraitSnapshot)
class TraitSnapshotAdmin(SubjectRowAdmin):
    anchor = "personality-heading"
    list_display = ["subject", "timestamp", "interactions_count", "short_reason"]
    search_fields = ["subject__key", "reason"]
    date_hierarchy = "timestamp"

    @admin.display(description="Reason")
    def short_reason(self, obj: TraitSnapshot) -> str:
        return _short(obj.reason)


@admin.register(EmotionState)
class EmotionStateAdmin(SubjectRowAdmin):
    anchor = "emotions-heading"
    list_display = [
        "subject",
        "current_emotion",
        "current_intensity",
        "current_since",
        "total_emotions_recorded",
        "total_transitions",
        "max_history",
        "last_updated",
    ]
    list_filter = ["current_emotion"]
    search_fields = ["subject__key"]


@admin.register(EmotionEvent)
class EmotionEventAdmin(SubjectRowAdmin):
    anchor = "emotions-heading"
    list_display = ["subject", "timestamp", "emotion", "intensity", "triggered_by", "context"]
    list_filter = ["triggered_by", "emotion"]
    search_fields = ["subject__key", "emotion", "context"]
    date_hierarchy = "timestamp"


@admin.register(EmotionTransition)
class EmotionTransitionAdmin(SubjectRowAdmin):
    anchor = "emotions-heading"
    list_display = ["subject", "from_emotion", "to_emotion", "count", "avg_duration_seconds"]
    list_filter = ["from_emotion", "to_emotion"]
    search_fields = ["subject__key", "from_emotion", "to_emotion"]


class TransitionProbabilityForm(forms.ModelForm):
    """The database refuses a probability outside [0, 1]; the form says so first, per field."""

    probability = forms.FloatField(min_value=0.0, max_value=1.0)

    class Meta:
        model = TransitionProbability
        fields = ["from_emotion", "to_emotion", "probability"]


@admin.register(TransitionProbability)
class TransitionProbabilityAdmin(admin.ModelAdmin):
    """The realistic-transition matrix: every recorded emotion is checked against it at once, so
    tuning it here changes what agents may record; each add, change or delete is audited."""

    form = TransitionProbabilityForm
    list_display = ["from_emotion", "to_emotion", "probability", "realistic"]
    list_editable = ["probability"]
    list_filter = ["from_emotion", "to_emotion"]
    search_fields = ["from_emotion", "to_emotion"]
    ordering = ["from_emotion", "-probability", "to_emotion"]

    @admin.display(boolean=True, description=f"Allowed (> {THRESHOLD})")
    def realistic(self, obj: TransitionProbability) -> bool:
        return obj.probability > THRESHOLD

    def save_model(self, request: HttpRequest, obj: TransitionProbability, form: forms.ModelForm, change: bool) -> None:
        super().save_model(request, obj, form, change)
        record(
            actor=signed_in(request),
            action=AuditAction.TRANSITION_PROBABILITY_CHANGED if change else AuditAction.TRANSITION_PROBABILITY_ADDED,
            target=obj,
            move=f"{obj.from_emotion} -> {obj.to_emotion}",
            probability=obj.probability,
            fields=list(form.changed_data),
        )

    def delete_model(self, request: HttpRequest, obj: TransitionProbability) -> None:
        record(
            actor=signed_in(request),
            action=AuditAction.TRANSITION_PROBABILITY_DELETED,
            target=obj,
            move=f"{obj.from_emotion} -> {obj.to_emotion}",
        )
        super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[TransitionProbability]) -> None:
        for obj in queryset:
            self.delete_model(request, obj)
