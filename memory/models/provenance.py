"""Who wrote an item of the fleet's shared memory, through which work, and whether it is held.

Shared memory is read by agents that did not write it, so each item keeps its author (the agent,
or the person as ``created_by`` words it elsewhere) and the job or session it came from, and an
item that no block may serve yet is *held*: screened as addressing the model rather than stating
a lesson, or quarantined with the rest of its author's items (memory/holds.py)."""

from __future__ import annotations

from django.db import models


class Provenance(models.Model):
    """The agent that wrote the item and the work it wrote it in. The job and session are the
    author's own (memory/provenance.py checks that); a session is named by app label, as the
    memory app sits beside sessions, not above it."""

    author = models.ForeignKey(
        "agents.Agent",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The agent that wrote it; empty for an operator's or an import's",
    )
    job = models.ForeignKey(
        "agents.Job",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Written in this job",
    )
    session = models.ForeignKey(
        "ai_sessions.AISession",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Written in this session",
    )

    class Meta:
        abstract = True


class Held(models.Model):
    """An item no block or search serves until a reviewer releases it."""

    held_at = models.DateTimeField(null=True, blank=True, help_text="Not served until a reviewer releases it")
    held_reasons = models.JSONField(default=list, blank=True, help_text="Why it is held, in reviewers' words")

    class Meta:
        abstract = True
