"""The reviewer inbox and the decision log."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.conf import settings
from django.db import models

from governance.reviews.querysets import ReviewItemQuerySet

# The one mapping from an inbox kind to the words reviewers read: rows, the kind filter, bulk
# confirmations. A kind missing here reads as its code with spaces ("memory promotion").
KIND_LABELS = {
    "learning_promotion": "Learning promotion",
    "session_validation": "Action approval",
    "session_communication": "Question",
    "tool_approval": "Tool call",
    "agent.approval": "Approval request",
    "escalation": "Escalation",
    "kpi_critical": "KPI critical",
    "memory_hold": "Held memory",
}


def payload_hash(payload: Any) -> str:
    """SHA-256 of the canonical JSON of ``payload``: what a decision, a tool grant and an agent's
    approval request are bound to."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def _shown_actions(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The actions an action approval asks to run, each as its words (the validation context's,
    whose long values are shortened) with its full parameters as JSON: the reviewer reads those
    before approving. Items from before the actions were kept have their words only."""
    commands = [command for command in payload.get("actionCommands") or [] if isinstance(command, dict)]
    words = [str(action) for action in (payload.get("validationContext") or {}).get("actions") or []]
    if not commands:
        return [{"words": action, "parameters": None} for action in words]
    if len(words) != len(commands):
        words = [f"Run {(command.get('params') or {}).get('tool_id') or command.get('type')}" for command in commands]
    return [
        {
            "words": action,
            "parameters": json.dumps(command.get("params") or {}, indent=2, sort_keys=True, ensure_ascii=False),
        }
        for action, command in zip(words, commands, strict=True)
    ]


def kind_label(kind: str) -> str:
    return KIND_LABELS.get(kind) or kind.replace("_", " ").replace(".", " ").capitalize()


def _decision_text(kind: str, payload: dict[str, Any]) -> str:
    """What the reviewer decides on, as one text: the learning for a promotion, the actions for
    an action approval, the question for a question, the tool and its arguments for a tool call,
    the details for an agent's approval request. Empty for kinds whose row shows facts instead."""
    if kind in ("learning_promotion", "memory_hold"):
        return str(payload.get("text") or "")
    if kind == "session_validation":
        actions = (payload.get("validationContext") or {}).get("actions") or [
            f"Run {command.get('type')}" for command in payload.get("actionCommands") or [] if isinstance(command, dict)
        ]
        return "; ".join(str(action) for action in actions)
    if kind == "session_communication":
        data = (payload.get("module") or {}).get("data") or {}
        return str(data.get("question") or data.get("message") or "")
    if kind == "tool_approval":
        arguments = json.dumps(payload.get("arguments"), sort_keys=True, ensure_ascii=False)
        return f"{payload.get('toolId', '')}({arguments})"
    if kind == "agent.approval":
        return str(payload.get("details") or "")
    return ""


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
    def kind_label(self) -> str:
        return kind_label(self.kind)

    @property
    def decision_text(self) -> str:
        return _decision_text(self.kind, self.payload if isinstance(self.payload, dict) else {})

    @property
    def content_hash(self) -> str:
        """The hash of what the item shows, which a reviewer's decision posts back: a decision on
        an item whose content changed since it was shown is refused."""
        return payload_hash(self.payload)

    @property
    def shown_actions(self) -> list[dict[str, Any]]:
        return _shown_actions(self.payload if isinstance(self.payload, dict) else {})


class ReviewDecision(models.Model):
    """A human (or the system, on expiry) deciding a review item. Written once, never changed.

    ``payload_hash`` is the SHA-256 of the item's payload at decision time, so what was approved
    can be proven later even if someone edits the item. ``minted_by`` names who minted the
    operator key of the decider when it was not the decider (a superuser, the create_api_key
    command), so a decision made with someone else's key never reads as theirs alone.
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
