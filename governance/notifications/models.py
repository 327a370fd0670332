"""Notification rules (who is told of what, and where), the crossing state of compliance rules,
the deliveries (one row per message, with its status) and the events waiting for a rule's digest."""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator
from django.db import models

from governance.notifications import messages


class EventKind(models.TextChoices):
    INBOX_VALIDATION = "inbox.validation", "New inbox item: validation request"
    INBOX_COMMUNICATION = "inbox.communication", "New inbox item: communication request"
    INBOX_TOOL_APPROVAL = "inbox.tool_approval", "New inbox item: tool approval"
    INBOX_PROMOTION = "inbox.promotion", "New inbox item: learning promotion"
    ESCALATION = "escalation", "Escalation"
    KPI_CRITICAL = "kpi.critical", "KPI turned critical"
    CONTRACT_COMPLIANCE = "contract.compliance_below", "Contract compliance below threshold"


# How each kind is told beside others (every kind has one: tested): its words in a digest's counts,
# and whether it goes out at once even on a digest rule. An escalation is urgent: a human must act
# before its deadline, which a digest's wait would eat into.
TELLING: dict[str, messages.Telling] = {
    EventKind.INBOX_VALIDATION: messages.Telling("validation request", "validation requests"),
    EventKind.INBOX_COMMUNICATION: messages.Telling("question", "questions"),
    EventKind.INBOX_TOOL_APPROVAL: messages.Telling("approval", "approvals"),
    EventKind.INBOX_PROMOTION: messages.Telling("learning promotion", "learning promotions"),
    EventKind.ESCALATION: messages.Telling("escalation", "escalations", urgent=True),
    EventKind.KPI_CRITICAL: messages.Telling("critical KPI", "critical KPIs"),
    EventKind.CONTRACT_COMPLIANCE: messages.Telling("compliance drop", "compliance drops"),
}


class Channel(models.TextChoices):
    SLACK = "slack", "Slack-compatible webhook"
    SIGNED_WEBHOOK = "signed_webhook", "Signed JSON webhook"
    EMAIL = "email", "Email"


class NotificationRule(models.Model):
    """Operators say which events go where, for every agent or one agent or one domain. Disabled,
    never deleted: the deliveries keep naming their rule."""

    name = models.CharField(max_length=100, unique=True)
    events = ArrayField(models.CharField(max_length=40, choices=EventKind.choices), help_text="One or several.")
    agent = models.ForeignKey(
        "agents.Agent",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Only this agent's events; empty: every agent.",
    )
    domain = models.CharField(max_length=20, blank=True, help_text="Only agents of this domain; empty: every domain.")
    channel = models.CharField(max_length=20, choices=Channel.choices)
    target = models.CharField(
        max_length=1000,
        help_text="The webhook's https URL (no query string), or email addresses separated by commas.",
    )
    internal = models.BooleanField(
        default=False,
        db_default=False,  # rules the previous release adds while the new one migrates
        help_text="The receiver is on your own network: allow plain http and private or loopback addresses "
        "(cloud metadata addresses stay refused).",
    )
    threshold_percent = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Compliance rules: told once when compliance drops below this percentage."
    )
    window_checks = models.PositiveIntegerField(
        default=20, help_text="Compliance rules: measured over this many latest checks of a contract."
    )
    digest_seconds = models.PositiveIntegerField(
        default=0,
        db_default=0,  # rules the previous release adds while the new one migrates
        validators=[MaxValueValidator(86400)],
        help_text="Tell at most one message per this many seconds, summing up what happened (60: one a minute); "
        "0: each event at once. Escalations always go at once.",
    )
    secret_version = models.PositiveIntegerField(default=1, editable=False)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=200, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        """A target the channel can use (a webhook's through the outbound guard, its name resolved);
        a threshold when the rule watches compliance."""
        problem = (
            messages.email_problem(self.target)
            if self.channel == Channel.EMAIL
            else messages.url_problem(self.target, internal=self.internal)
        )
        errors: dict[str, str] = {"target": problem} if problem else {}
        if EventKind.CONTRACT_COMPLIANCE in (self.events or []):
            if self.threshold_percent is None or not 1 <= self.threshold_percent <= 100:
                errors["threshold_percent"] = "A compliance rule needs a threshold between 1 and 100 (%)."
            if self.window_checks < 1:
                errors["window_checks"] = "Measure over at least one check."
        if errors:
            raise ValidationError(errors)


class ComplianceWatch(models.Model):
    """Whether a compliance rule last saw a contract below its threshold: told once when it drops
    below, and again only after it has recovered."""

    rule = models.ForeignKey(NotificationRule, on_delete=models.PROTECT, related_name="watches")
    contract_name = models.CharField(max_length=100)
    below = models.BooleanField(default=False)
    percent = models.FloatField()
    changed_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["rule", "contract_name"], name="one_watch_per_rule_contract")]
        verbose_name_plural = "compliance watches"

    def __str__(self) -> str:
        return f"{self.contract_name} for {self.rule.name}: {'below' if self.below else 'at or above'}"


# The event of a delivery that tells several at once (X-Governance-Event of a signed digest).
DIGEST = "digest"


class Delivery(models.Model):
    """One message to one rule's target: exactly what was sent, and how sending went."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"  # refused for good (a 4xx other than 429): not retried
        GAVE_UP = "gave_up", "Gave up"  # NOTIFY_MAX_ATTEMPTS attempts failed

    class Failure(models.TextChoices):
        """Why the last attempt failed: what the row keeps instead of anything the receiver said,
        which may hold its internals and which every Viewer would read."""

        HTTP_ERROR = "http_error", "The receiver answered an error status"
        REFUSED_ADDRESS = "refused_address", "The outbound guard refused the address"
        CONFIGURATION = "configuration", "The target is not a usable URL"
        TIMEOUT = "timeout", "The receiver did not answer in time"
        CONNECTION = "connection", "The receiver could not be reached"
        MAIL = "mail", "The mail server could not take it"
        RULE_DISABLED = "rule_disabled", "The rule was disabled before this was sent"
        INVALID = "invalid", "The stored delivery could not be sent (see the server log)"

    rule = models.ForeignKey(NotificationRule, on_delete=models.PROTECT, related_name="deliveries")
    event = models.CharField(max_length=40, choices=[*EventKind.choices, (DIGEST, "Digest of several events")])
    channel = models.CharField(max_length=20, choices=Channel.choices)
    target = models.CharField(max_length=1000)
    payload = models.JSONField(help_text="The JSON sent (email: subject and body): links and short facts only.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_status = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="The HTTP status of the receiver's last answer, when it answered."
    )
    last_category = models.CharField(max_length=20, choices=Failure.choices, blank=True, default="", db_default="")
    created_at = models.DateTimeField(auto_now_add=True)
    next_attempt_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "deliveries"
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="delivery_due")]

    def __str__(self) -> str:
        return f"{self.get_event_display()} to {self.rule.name}: {self.status}"


class DigestEntry(models.Model):
    """An event a digest rule tells in its next digest: held until the rule's window is over, then
    kept with the delivery that told it (archived, never deleted: the digest's counts stay
    provable)."""

    rule = models.ForeignKey(NotificationRule, on_delete=models.PROTECT, related_name="digest_entries")
    event = models.CharField(max_length=40, choices=EventKind.choices)
    agent = models.CharField(max_length=200, blank=True, help_text="The agent of the event; empty: none.")
    notice = models.JSONField(help_text="The event as it would have been told alone: title, link, facts, summary.")
    created_at = models.DateTimeField(auto_now_add=True)
    delivery = models.ForeignKey(
        Delivery,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="entries",
        help_text="The digest that told it; empty: waiting for the rule's window to end.",
    )

    class Meta:
        ordering = ["pk"]
        verbose_name_plural = "digest entries"
        indexes = [
            models.Index(fields=["rule", "created_at"], condition=models.Q(delivery=None), name="digest_entry_waiting")
        ]

    def __str__(self) -> str:
        return f"{self.get_event_display()} for {self.rule.name}: {'told' if self.delivery_id else 'waiting'}"
