"""The reviewer inbox and the decision log."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.conf import settings
from django.db import models

from governance.reviews import kinds
from governance.reviews.querysets import ReviewItemQuerySet


def payload_hash(payload: Any) -> str:
    """SHA-256 of the canonical JSON of ``payload``: what a decision, a tool grant and an agent's
    approval request are bound to."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


class ReviewItem(models.Model):
    """Something waiting for a human decision in the reviewer inbox.

    Sessions (validation and communication requests), escalations and memory promotions all
    feed this one table, so reviewers work from a single queue.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        ANSWERED = "answered", "Answered"
        EXPIRED = "expired", "Expired"

    kind = models.CharField(max_length=50)
    title = models.CharField(max_length=300)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True)
    agent = models.ForeignKey(
        "agents.Agent", null=True, blank=True, on_delete=models.PROTECT, related_name="review_items"
    )
    payload = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)

    objects = ReviewItemQuerySet.as_manager()

    class Meta:
        ordering = ["created_at"]
        permissions = [("decide_reviewitem", "Can approve, reject or answer review items")]

    def __str__(self) -> str:
        return f"{self.kind}: {self.title}"

    @property
    def review_kind(self) -> kinds.ReviewKind:
        """What the app that opened the item declared of its kind (governance.reviews.kinds)."""
        return kinds.get(self.kind)

    @property
    def payload_dict(self) -> dict[str, Any]:
        """The payload, or nothing when it is not an object (every app writes an object)."""
        return self.payload if isinstance(self.payload, dict) else {}

    @property
    def kind_label(self) -> str:
        return self.review_kind.label

    @property
    def kind_template(self) -> str:
        return self.review_kind.template

    @property
    def kind_details(self) -> dict[str, Any]:
        return self.review_kind.details(self.payload_dict)

    @property
    def decision_text(self) -> str:
        return self.review_kind.summary(self.payload_dict)

    @property
    def decision_controls(self) -> tuple[kinds.Control, ...]:
        return self.review_kind.controls(self.payload_dict)

    @property
    def bulk_decidable(self) -> bool:
        return self.review_kind.bulk

    @property
    def content_hash(self) -> str:
        """The hash of what the item shows, which a reviewer's decision posts back: a decision on
        an item whose content changed since it was shown is refused."""
        return payload_hash(self.payload)


class ReviewDecision(models.Model):
    """A human (or the system, on expiry) deciding a review item. Written once, never changed.

    ``payload_hash`` is the SHA-256 of the item's payload at decision time, so what was approved
    can be proven later even if someone edits the item. ``minted_by`` names who minted the
    operator key of the decider when it was not the decider (a superuser, the create_api_key
    command), so a decision made with someone else's key never reads as theirs alone.

    ``amended`` is the payload a reviewer approved instead of the item's, when its kind lets them
    edit it (a tool call's arguments), and ``amended_hash`` its SHA-256: the item keeps what was
    asked, the decision what was approved. Fields of their own rather than ``answer``, which is a
    question's answer and reads as one on every page and export.
    """

    class Decision(models.TextChoices):
        APPROVE = "approve", "Approve"
        REJECT = "reject", "Reject"
        ANSWER = "answer", "Answer"
        EXPIRE = "expire", "Expire"

    item = models.OneToOneField(ReviewItem, on_delete=models.PROTECT, related_name="decision")
    decision = models.CharField(max_length=10, choices=Decision.choices)
    comment = models.TextField(blank=True)
    answer = models.JSONField(null=True, blank=True)
    decided_by = models.CharField(max_length=200, help_text="user:<name> or system")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    minted_by = models.CharField(
        max_length=200,
        blank=True,
        default="",
        db_default="",  # decisions the previous release records while the new one migrates
        help_text="minter of the decider's key, if not them",
    )
    decided_at = models.DateTimeField(auto_now_add=True)
    payload_hash = models.CharField(max_length=64)
    amended = models.JSONField(null=True, blank=True, help_text="The payload approved instead of the item's")
    amended_hash = models.CharField(
        max_length=64,
        blank=True,
        default="",
        db_default="",  # decisions the previous release records while the new one migrates
        help_text="SHA-256 of the amended payload; empty when approved as asked",
    )

    class Meta:
        ordering = ["-decided_at"]

    def __str__(self) -> str:
        return f"{self.decision} by {self.decider}"

    @property
    def decider(self) -> str:
        """Who decided, in the words pages show: the username (or ``system``), and the minter of
        the key they used when someone else minted it."""
        who = self.user.get_username() if self.user is not None else self.decided_by
        return f"{who} (key minted by {self.minted_by})" if self.minted_by else who
