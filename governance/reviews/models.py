"""The reviewer inbox and the decision log."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from governance.reviews.querysets import ReviewItemQuerySet


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


class ReviewDecision(models.Model):
    """A human (or the system, on expiry) deciding a review item. Written once, never changed.

    ``payload_hash`` is the SHA-256 of the item's payload at decision time, so what was approved
    can be proven later even if someone edits the item.
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
    decided_at = models.DateTimeField(auto_now_add=True)
    payload_hash = models.CharField(max_length=64)

    class Meta:
        ordering = ["-decided_at"]

    def __str__(self) -> str:
        return f"{self.decision} by {self.decided_by}"
