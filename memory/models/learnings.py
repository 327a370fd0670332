"""Learnings and their lifecycle (seed 004 sections 2.3-2.4): learnings, their injections into
stories, gate results, reuse scores and the runs that compute them, promotion proposals.

Every JSONL file of the seed becomes a table; its atomic-rename and flock machinery becomes
transactions and constraints."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from memory.models.provenance import Held, Provenance
from memory.querysets import LearningQuerySet


class Learning(Provenance, Held):
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
    restored_at = models.DateTimeField(
        null=True, blank=True, help_text="An operator took it out of the archive: eviction counts its age from here"
    )
    redacted_at = models.DateTimeField(
        null=True, blank=True, help_text="An operator replaced its text: it has no vector and is never embedded again"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=200, blank=True)

    objects = LearningQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            # Covering: scoring finds the learnings of a key from the index alone (issue 18.6).
            models.Index(fields=["story", "gate", "tags_hash"], include=["id"], name="learning_score_key"),
            models.Index(fields=["scope", "domain"], name="learning_scope_domain"),
        ]

    def __str__(self) -> str:
        return f"{self.story} gate {self.gate}: {self.text[:60]}"


class ErasedLearning(models.Model):
    """A learning an operator erased or redacted, as a one-way hash of its key and text, never the
    text: importing the seed's files again (they live on next to this system) must not bring the
    content back (memory/privacy.py, memory/transfer.py)."""

    digest = models.CharField(max_length=64, unique=True, help_text="sha256 of story, gate, tags_hash and text")
    at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"erased {self.digest[:12]}"


class LearningInjection(models.Model):
    """A learning served in a step-0 injection block: the raw material of reuse scores.

    Scores are keyed by the learning's (story, gate, tags_hash), so each injection carries that key,
    as the seed's injection lines did: a scoring run then counts injections by key without reading
    a learning (issue 18.6). The database writes the copy, never a caller: the trigger
    ``injection_learning_key`` (migration 0016) sets it from the learning on every insert and
    update, whatever the writer sends. A learning's key never changes after it is created."""

    learning = models.ForeignKey(Learning, on_delete=models.PROTECT, related_name="injections", db_index=False)
    story = models.CharField(max_length=100, help_text="The story it was injected into")
    domain = models.CharField(max_length=100)
    project = models.CharField(max_length=100)
    at = models.DateTimeField(db_index=True)
    served_to = models.CharField(max_length=200, blank=True, db_default="", help_text="Who the block was served to")
    similarity = models.FloatField(
        null=True,
        blank=True,
        help_text="Its cosine similarity to the block's query (0 without one); empty before it was kept",
    )
    learning_story = models.CharField(max_length=100, editable=False, help_text="The learning's story")
    learning_gate = models.PositiveSmallIntegerField(editable=False, help_text="The learning's gate")
    learning_tags_hash = models.CharField(max_length=64, editable=False, help_text="The learning's tags_hash")

    class Meta:
        ordering = ["-at"]
        indexes = [
            models.Index(fields=["learning"], name="injection_learning"),
            # Covering, and in the order a full scoring run counts them (memory/scoring.py).
            models.Index(
                fields=["learning_story", "learning_gate", "learning_tags_hash", "story"],
                include=["domain", "at", "similarity"],
                name="injection_score_key",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.learning_id} -> {self.story}"


class GateResult(Provenance):
    class Verdict(models.TextChoices):
        GO = "GO"
        NO_GO = "NO_GO"

    story = models.CharField(max_length=100)
    gate = models.PositiveSmallIntegerField()
    verdict = models.CharField(max_length=5, choices=Verdict.choices)
    at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-at"]
        indexes = [
            models.Index(fields=["story", "gate", "verdict", "at"], name="gate_result_lookup"),
            # Each story's latest gate-8 GO, which every scoring run reads (memory/scoring.py).
            models.Index(fields=["story", "at"], condition=Q(gate=8, verdict="GO"), name="gate_go_by_story"),
        ]

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
    keys_corrected = models.PositiveIntegerField(
        null=True, blank=True, help_text="Full runs: existing keys whose stored numbers were wrong"
    )
    keys_created = models.PositiveIntegerField(
        null=True, blank=True, help_text="Full runs: injected keys that had no score row yet"
    )
    keys_removed = models.PositiveIntegerField(
        null=True, blank=True, help_text="Full runs: score rows of keys no longer injected at all"
    )
    last_injection_id = models.BigIntegerField()
    last_gate_result_id = models.BigIntegerField()

    class Meta:
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return f"{self.mode} {self.started_at:%Y-%m-%d %H:%M}: {self.keys_updated} keys"


# --- Per-subject conversational memory (seed 002) ------------------------------------------------
