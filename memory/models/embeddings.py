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
