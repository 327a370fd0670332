"""Watch notes ("veille", seed 004 section 2.1) and PO clarifications (section 2.2)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from memory.models.provenance import Held, Provenance
from memory.querysets import ClarificationQuerySet, VeilleNoteQuerySet


class VeilleNote(Provenance, Held):
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
    redacted_at = models.DateTimeField(
        null=True, blank=True, help_text="An operator replaced its title and summary: never embedded again"
    )
    indexed_at = models.DateTimeField(auto_now=True)

    objects = VeilleNoteQuerySet.as_manager()

    class Meta:
        ordering = ["-date"]

    def __str__(self) -> str:
        return self.title


class Clarification(Provenance):
    """One of the four verbatim answers given for a story; a new call makes a new version."""

    story = models.CharField(max_length=100)
    domain = models.CharField(max_length=100)
    project = models.CharField(max_length=100)
    version = models.PositiveIntegerField()
    name = models.CharField(max_length=200, help_text="PD-XXX-clarifications[-timestamp].md, as the seed named files")
    question_idx = models.PositiveSmallIntegerField()
    verbatim = models.TextField()
    date = models.DateTimeField()
    redacted_at = models.DateTimeField(
        null=True, blank=True, help_text="An operator replaced the answer: it is never embedded again"
    )

    objects = ClarificationQuerySet.as_manager()

    class Meta:
        ordering = ["-date", "question_idx"]
        constraints = [
            models.UniqueConstraint(fields=["story", "version", "question_idx"], name="clarification_answer"),
            models.CheckConstraint(condition=Q(question_idx__gte=1, question_idx__lte=4), name="four_questions"),
        ]
        indexes = [models.Index(fields=["domain", "project", "-date"], name="clarification_lookup")]

    def __str__(self) -> str:
        return f"{self.story} v{self.version} Q{self.question_idx}"
