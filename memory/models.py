"""What agents learned (seed 004): learnings and their lifecycle, injections, gate results,
reuse scores, promotion proposals, watch notes ("veille"), clarifications, and embeddings.

Every JSONL file of the seed becomes a table here; its atomic-rename and flock machinery becomes
transactions and constraints.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from pgvector.django import VectorField


class Learning(models.Model):
    class Scope(models.TextChoices):
        STORY = "story", "Story"
        DOMAIN = "domain", "Domain"
        GLOBAL = "global", "Global"
        ARCHIVED = "archived", "Archived"

    story = models.CharField(max_length=100, help_text="The story it was learned in, e.g. PD-295")
    gate = models.PositiveSmallIntegerField()
    domain = models.CharField(max_length=100)
    project = models.CharField(max_length=100)
    tags = models.JSONField(default=list, help_text="Canonical tags (normalised, sorted, #-prefixed)")
    tags_hash = models.CharField(max_length=64, help_text="compute_tags_hash(tags), seed section 2.6")
    text = models.TextField()
    scope = models.CharField(max_length=10, choices=Scope.choices, default=Scope.STORY)
    date_created = models.DateField(null=True, blank=True)
    date = models.DateField(null=True, blank=True, help_text="Older entries' only date; the age falls back to it")
    scope_migrated_at = models.DateTimeField(null=True, blank=True)
    scope_changed_at = models.DateTimeField(null=True, blank=True)
    archived_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["story", "gate", "tags_hash"], name="learning_score_key"),
            models.Index(fields=["scope", "domain"], name="learning_scope_domain"),
        ]

    def __str__(self) -> str:
        return f"{self.story} gate {self.gate}: {self.text[:60]}"


class LearningInjection(models.Model):
    """A learning served in a step-0 injection block: the raw material of reuse scores."""

    learning = models.ForeignKey(Learning, on_delete=models.PROTECT, related_name="injections")
    story = models.CharField(max_length=100, help_text="The story it was injected into")
    domain = models.CharField(max_length=100)
    project = models.CharField(max_length=100)
    at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-at"]
        indexes = [models.Index(fields=["learning", "story"], name="injection_learning_story")]

    def __str__(self) -> str:
        return f"{self.learning_id} -> {self.story}"


class GateResult(models.Model):
    class Verdict(models.TextChoices):
        GO = "GO"
        NO_GO = "NO_GO"

    story = models.CharField(max_length=100)
    gate = models.PositiveSmallIntegerField()
    verdict = models.CharField(max_length=5, choices=Verdict.choices)
    at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-at"]
        indexes = [models.Index(fields=["story", "gate", "verdict", "at"], name="gate_result_lookup")]

    def __str__(self) -> str:
        return f"{self.story} gate {self.gate}: {self.verdict}"


class ReuseScore(models.Model):
    """The seed's learnings-scores.jsonl: one row per (story, gate, tags_hash) that was injected.

    reuse_score = 0.4 * injections + 0.4 * distinct stories with a gate-8 GO after injection
    + 0.2 * distinct domains (a raw sum, not a ratio: seed section 2.3, TC-NOM-05)."""

    story = models.CharField(max_length=100)
    gate = models.PositiveSmallIntegerField()
    tags_hash = models.CharField(max_length=64)
    nb_injections = models.PositiveIntegerField()
    nb_stories_gate8_go = models.PositiveIntegerField()
    nb_domains = models.PositiveIntegerField()
    reuse_score = models.DecimalField(max_digits=10, decimal_places=4)
    computed_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["story", "gate", "tags_hash"], name="reuse_score_key")]

    def __str__(self) -> str:
        return f"{self.story}/{self.gate}/{self.tags_hash[:8]}: {self.reuse_score}"


class PromotionProposal(models.Model):
    class Status(models.TextChoices):
        PROPOSED = "proposed", "Proposed"
        APPLIED = "applied", "Applied"
        REJECTED = "rejected", "Rejected"
        REFUSED = "refused", "Refused by the lifecycle rules"

    learning = models.ForeignKey(Learning, on_delete=models.PROTECT, related_name="proposals")
    from_scope = models.CharField(max_length=10)
    to_scope = models.CharField(max_length=10)
    reuse_score = models.DecimalField(max_digits=10, decimal_places=4)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PROPOSED)
    review_item = models.ForeignKey(
        "governance.ReviewItem", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["learning", "to_scope"], condition=Q(status="proposed"), name="one_open_proposal_per_step"
            )
        ]

    def __str__(self) -> str:
        return f"{self.learning_id}: {self.from_scope} -> {self.to_scope} ({self.status})"


class VeilleNote(models.Model):
    """A watch note: a Markdown file with YAML front matter (seed section 2.1)."""

    class Verdict(models.TextChoices):
        SIGNAL = "signal"
        BRUIT = "bruit"
        VEILLE = "veille"

    class Impact(models.TextChoices):
        FORT = "fort"
        MODERE = "modere"
        FAIBLE = "faible"
        AUCUN = "aucun"

    path = models.CharField(max_length=500, unique=True, help_text="File path, or a name for notes posted to the API")
    title = models.CharField(max_length=300)
    date = models.DateField()
    verdict_veille = models.CharField(max_length=10, choices=Verdict.choices)
    impact_pv = models.CharField(max_length=10, choices=Impact.choices)
    summary = models.TextField()
    tags = models.JSONField(default=list)
    indexed_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-date"]

    def __str__(self) -> str:
        return self.title


class Clarification(models.Model):
    """One of the four verbatim answers given for a story; a new call makes a new version."""

    story = models.CharField(max_length=100)
    domain = models.CharField(max_length=100)
    project = models.CharField(max_length=100)
    version = models.PositiveIntegerField()
    name = models.CharField(max_length=200, help_text="PD-XXX-clarifications[-timestamp].md, as the seed named files")
    question_idx = models.PositiveSmallIntegerField()
    verbatim = models.TextField()
    date = models.DateTimeField()

    class Meta:
        ordering = ["-date", "question_idx"]
        constraints = [
            models.UniqueConstraint(fields=["story", "version", "question_idx"], name="clarification_answer"),
            models.CheckConstraint(condition=Q(question_idx__gte=1, question_idx__lte=4), name="four_questions"),
        ]
        indexes = [models.Index(fields=["domain", "project", "-date"], name="clarification_lookup")]

    def __str__(self) -> str:
        return f"{self.story} v{self.version} Q{self.question_idx}"


class Embedding(models.Model):
    """Vectors of several models in one table (DESIGN section 3): the `vector` column is untyped,
    and each (kind, model) pair gets its own partial HNSW index over a cast to its dimension.
    Archived learnings are `active = false`, outside every active index."""

    kind = models.CharField(max_length=20, help_text="learning, veille or clarification")
    object_id = models.BigIntegerField()
    model = models.CharField(max_length=100)
    dimension = models.PositiveIntegerField()
    embedding = VectorField()
    text_sha256 = models.CharField(max_length=64, help_text="Of the text embedded: a change re-embeds")
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["kind", "object_id", "model"], name="one_vector_per_object_and_model")
        ]

    def __str__(self) -> str:
        return f"{self.kind}:{self.object_id} ({self.model})"


class ScoringRun(models.Model):
    """One reuse-score computation. Its watermarks make the next incremental run cost what
    changed since: injections and gate results with a higher id."""

    class Mode(models.TextChoices):
        FULL = "full"
        INCREMENTAL = "incremental"

    mode = models.CharField(max_length=12, choices=Mode.choices)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()
    keys_updated = models.PositiveIntegerField()
    last_injection_id = models.BigIntegerField()
    last_gate_result_id = models.BigIntegerField()

    class Meta:
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return f"{self.mode} {self.started_at:%Y-%m-%d %H:%M}: {self.keys_updated} keys"
