"""One vector per embedded row of every kind (pgvector), searched by memory/search.py."""

from __future__ import annotations

from django.db import models
from pgvector.django import VectorField


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
    subject = models.ForeignKey(
        "memory.Subject",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text="Per-subject memories (kind subject): a subject's search scans its own rows, and "
        "erasing the subject erases its vectors",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["kind", "object_id", "model"], name="one_vector_per_object_and_model")
        ]

    def __str__(self) -> str:
        return f"{self.kind}:{self.object_id} ({self.model})"


class SearchCalibration(models.Model):
    """What `manage.py tune_search` (and its weekly task) last measured for one (kind, model): the lowest
    `hnsw.ef_search` whose recall@k, against an exact scan of a sample of the stored vectors, reached the
    target. Searches of that kind and model use it from then on (each process reads the table again at
    most a minute later: memory/search.py). One row per (kind, model), updated in place; each
    run is also an audit event."""

    kind = models.CharField(max_length=20)
    model = models.CharField(max_length=100)
    ef_search = models.PositiveIntegerField(help_text="What searches of this kind and model now use")
    recall = models.FloatField(help_text="recall@k measured at that ef_search")
    target = models.FloatField(help_text="MEMORY_SEARCH_RECALL_TARGET when measured")
    reached = models.BooleanField(help_text="False: even the largest ef_search tried fell short of the target")
    k = models.PositiveSmallIntegerField()
    sample_size = models.PositiveIntegerField()
    vectors = models.PositiveBigIntegerField(help_text="Active vectors of this kind and model when measured")
    curve = models.JSONField(default=list, help_text="Every ef_search tried, with its recall")
    measured_at = models.DateTimeField()
    measured_by = models.CharField(max_length=200)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["kind", "model"], name="one_calibration_per_kind_and_model")]
        verbose_name = "search calibration"

    def __str__(self) -> str:
        return f"{self.kind} / {self.model}: ef_search {self.ef_search} (recall {self.recall:.3f})"

    @property
    def recall_low(self) -> float | None:
        """The 95 % lower bound of the recall at the ef_search in use, which the choice rests on (None for
        a measure recorded before the bounds were)."""
        return next((point.get("low") for point in self.curve if point.get("ef_search") == self.ef_search), None)
