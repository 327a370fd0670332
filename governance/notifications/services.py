"""Telling reviewers and operators: the rules operators keep, the one entry point the other
layers call (``announce``), and sending a delivery.

``announce`` runs inside the caller's transaction: the deliveries commit with the event or not
at all, and the delivery task is queued only after that commit (``kernel.dispatch``). Sending
happens in the worker, never in the request: a slow receiver can't slow an agent down. A rule
with a digest window holds the event instead (a ``DigestEntry``, in the same transaction), told
with the rest of its window by ``digests``; an urgent kind (``models.TELLING``) never waits.

A delivery is claimed by moving its ``next_attempt_at`` past the request's timeout in one
conditional UPDATE, so a redelivered task, the backstop sweep and a retry never send it twice at
once. Targets come only from rules, and rules only from operators (the admin): nothing an agent
sends can make the server connect somewhere. A target passes the outbound guard when its rule
is saved and again at every attempt (DNS answers change), and the request goes to the address
that was checked. What a receiver answers is not kept: a delivery row holds the HTTP status and
a category (``Delivery.Failure``), since Viewers read those rows and an error page may show a
receiver's internals. A delivery that cannot be sent as stored is marked and logged once, not
retried at every sweep.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from datetime import timedelta
from http.client import HTTPException
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

import sessions.providers.outbound as outbound
from governance.kernel import dispatch, keys, periodic, webhooks
from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Forbidden
from governance.kernel.principals import Principal
from governance.kernel.services import record
from governance.notifications import messages
from governance.notifications.models import (
    TELLING,
    Channel,
    ComplianceWatch,
    Delivery,
    DigestEntry,
    EventKind,
    NotificationRule,
)

logger = logging.getLogger(__name__)

DELIVER_TASK = "notifications.deliver"


# Rules ------------------------------------------------------------------------------------------


def _require(actor: Principal, perm: str) -> None:
    if not actor.is_operator or not actor.has_perm(perm):
        raise Forbidden(f"Managing notification rules needs the {perm} permission.")


# Not durable: the admin's change form calls it inside Django's own transaction.
@transaction.atomic
def save_rule(rule: NotificationRule, *, actor: Principal, changed: list[str]) -> NotificationRule:
    """Add or change a rule (operators with the model permission): checked (the target above
    all), recorded with who and which fields. The target is not written to the audit row."""
    adding = rule.pk is None
    _require(actor, "governance.add_notificationrule" if adding else "governance.change_notificationrule")
    rule.full_clean()
    if adding:
        rule.created_by = actor.label
    rule.save()
    record(
        actor=actor,
        action=AuditAction.NOTIFICATION_RULE_ADDED if adding else AuditAction.NOTIFICATION_RULE_CHANGED,
        target=rule,
        fields=sorted(changed),
        enabled=rule.enabled,
    )
    return rule


@transaction.atomic(durable=True)
def rotate_secret(rule: NotificationRule, *, actor: Principal) -> NotificationRule:
    """A new signing secret; signatures made with the old one no longer verify."""
    _require(actor, "governance.change_notificationrule")
    NotificationRule.objects.filter(pk=rule.pk).update(secret_version=F("secret_version") + 1)
    rule.refresh_from_db(fields=["secret_version"])
    record(
        actor=actor,
        action=AuditAction.NOTIFICATION_RULE_SECRET_ROTATED,
        target=rule,
        secret_version=rule.secret_version,
    )
    return rule


def signing_secret(rule: NotificationRule) -> str:
    """The rule's signing secret as its receiver is given it (``whsec_...``), derived (never
    stored): SECRET_KEY, the rule, its version."""
    derived = keys.derived_secret(settings.SECRET_KEY, f"governance.notification-rule:{rule.pk}:{rule.secret_version}")
    return webhooks.secret_text(bytes.fromhex(derived))


# Announcing -------------------------------------------------------------------------------------


def _matching(event: str, *, agent: str | None, domain: str | None) -> QuerySet[NotificationRule]:
    """Enabled rules for ``event`` whose scope holds the agent and its domain."""
    rules = NotificationRule.objects.filter(enabled=True, events__contains=[event])
    rules = rules.filter(Q(agent__isnull=True) | Q(agent__agent_id=agent or ""))
    return rules.filter(Q(domain="") | Q(domain=domain or ""))


def payload(channel: str, notice: messages.Notice) -> dict[str, object]:
    """One event as ``channel`` tells it."""
    if channel == Channel.SLACK:
        return messages.slack(notice)
    if channel == Channel.EMAIL:
        return messages.email(notice)
    return messages.generic(notice)


def queue(rule: NotificationRule, *, event: str, sent: dict[str, object]) -> Delivery:
    """A delivery of ``sent`` to the rule's target, queued once the caller's transaction commits."""
    delivery = Delivery.objects.create(
        rule=rule,
        event=event,
        channel=rule.channel,
        target=rule.target,
        payload=sent,
        next_attempt_at=timezone.now(),
    )
    dispatch.after_commit(DELIVER_TASK, delivery.pk)
    return delivery


def link(path: str) -> str:
    """A path of this control plane as its readers open it (NOTIFY_BASE_URL: the public address)."""
    return settings.NOTIFY_BASE_URL + path


def _notice(
    event: str, title: str, link_path: str, facts: dict[str, Any], *, summary: str = "", agent: str | None = None
) -> messages.Notice:
    return messages.notice(
        event=event,
        event_label=EventKind(event).label,
        title=title,
        link=link(link_path),
        facts=facts,
        at=timezone.now().isoformat(timespec="seconds"),
        summary=summary,
        agent=agent or "",
    )


def _tell(rule: NotificationRule, notice: messages.Notice) -> Delivery | None:
    """A delivery now, or the event held for the rule's next digest (None): urgent kinds never wait."""
    if rule.digest_seconds and not TELLING[notice.event].urgent:
        DigestEntry.objects.create(rule=rule, event=notice.event, agent=notice.agent, notice=asdict(notice))
        return None
    return queue(rule, event=notice.event, sent=payload(rule.channel, notice))


def announce(
    event: str,
    *,
    agent: str | None,
    domain: str | None,
    title: str,
    link_path: str,
    facts: dict[str, Any],
    summary: str = "",
) -> list[Delivery]:
    """Tell every enabled rule for ``event`` whose scope holds ``agent`` and ``domain``: one
    delivery each, sent after the caller's transaction commits, or the event held for the rule's
    digest; returns the deliveries made now. ``link_path`` is a path of this control plane; the
    facts are short values (never an output, never a secret); ``summary`` says in one line what
    is to be decided (cut, and masked where it looks like a credential)."""
    rules = list(_matching(event, agent=agent, domain=domain))
    if not rules:
        return []
    notice = _notice(event, title, link_path, facts, summary=summary, agent=agent)
    return [delivery for rule in rules if (delivery := _tell(rule, notice)) is not None]


def compliance_rules() -> list[NotificationRule]:
    """The enabled rules watching contract compliance (the contracts layer measures for each)."""
    rules = NotificationRule.objects.filter(enabled=True, events__contains=[EventKind.CONTRACT_COMPLIANCE])
    return list(rules.select_related("agent"))


# Not durable: contracts.check measures compliance inside the transaction of the check.
@transaction.atomic
def compliance_measured(
    rule: NotificationRule, *, contract: str, percent: float, link_path: str, facts: dict[str, Any]
) -> Delivery | None:
    """A contract's compliance as ``rule`` measures it: told once when it drops below the rule's
    threshold, re-armed when it is back at or above it. The watch row is locked, so concurrent
    checks tell once."""
    now = timezone.now()
    watch, _ = ComplianceWatch.objects.select_for_update().get_or_create(
        rule=rule, contract_name=contract, defaults={"percent": percent, "changed_at": now}
    )
    below = percent < (rule.threshold_percent or 0)
    crossed = below and not watch.below
    if below != watch.below:
        watch.below, watch.changed_at = below, now
    watch.percent = percent
    watch.save()
    if not crossed:
        return None
    title = f"Contract {contract} compliance {percent:.0f}% is below {rule.threshold_percent}%"
    return _tell(rule, _notice(EventKind.CONTRACT_COMPLIANCE, title, link_path, facts))


# Sending ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    status: str  # a Delivery.Status, or "busy" when another run holds the delivery
    retry_in: int | None = None  # seconds until the next attempt, when one is due


class _Refused(Exception):
    """An attempt failed: why (a ``Delivery.Failure``), the receiver's status when it answered, and
    whether asking again may help. ``detail`` goes to the server log only, never to the row."""

    def __init__(self, category: str, *, retry: bool, status: int | None = None, detail: str = "") -> None:
        super().__init__(category)
        self.category, self.retry, self.status, self.detail = category, retry, status, detail


def _post(delivery: Delivery) -> None:
    """POST the stored payload to the checked address of the target. Redirects are answers, not
    new targets (http.client follows none); the receiver's body is never read."""
    sent = messages.body(delivery.payload)
    headers = {"Content-Type": "application/json", "User-Agent": "governance-notifications"}
    if delivery.channel == Channel.SIGNED_WEBHOOK:
        message_id = messages.message_id(delivery.pk)
        headers |= webhooks.signed_headers(signing_secret(delivery.rule), message_id, int(time.time()), sent)
        headers |= {messages.EVENT_HEADER: delivery.event}
    try:
        target = outbound.check(delivery.target, internal=delivery.rule.internal)
    except outbound.OutboundRefused as exc:
        raise _Refused(exc.category, retry=False, detail=str(exc)) from exc
    except (OSError, UnicodeError) as exc:  # socket.gaierror: no such name, resolver down
        raise _Refused(Delivery.Failure.CONNECTION, retry=True, detail=f"name resolution: {exc}") from exc
    connection = outbound.connection(target, settings.NOTIFY_TIMEOUT_SECONDS)
    try:
        connection.request("POST", target.path, body=sent, headers=headers)
        status = connection.getresponse().status
    except TimeoutError as exc:
        raise _Refused(Delivery.Failure.TIMEOUT, retry=True) from exc
    except (OSError, HTTPException) as exc:
        raise _Refused(Delivery.Failure.CONNECTION, retry=True, detail=f"{type(exc).__name__}: {exc}") from exc
    finally:
        connection.close()
    if not 200 <= status < 300:
        raise _Refused(Delivery.Failure.HTTP_ERROR, retry=messages.retryable(status), status=status)


def _mail(delivery: Delivery) -> None:
    try:
        send_mail(
            str(delivery.payload["subject"]),
            str(delivery.payload["body"]),
            settings.DEFAULT_FROM_EMAIL,
            messages.addresses(delivery.target),
        )
    except (OSError, ValueError) as exc:  # smtplib's errors are OSErrors
        raise _Refused(Delivery.Failure.MAIL, retry=True, detail=f"{exc.__class__.__name__}: {exc}") from exc


def _claim(delivery_id: int) -> bool:
    """Take a due pending delivery for one attempt; False when another run has it or it is done."""
    now = timezone.now()
    hold = now + timedelta(seconds=settings.NOTIFY_TIMEOUT_SECONDS + 60)
    return bool(
        Delivery.objects.filter(pk=delivery_id, status=Delivery.Status.PENDING, next_attempt_at__lte=now).update(
            attempts=F("attempts") + 1, next_attempt_at=hold
        )
    )


def attempt(delivery_id: int) -> Outcome:
    """One attempt at a delivery: sent, failed for good (a 4xx other than 429, a refused address),
    retried later with a doubling wait, or given up after NOTIFY_MAX_ATTEMPTS. Idempotent: a
    delivery that is not due, or no longer pending, is left alone. A delivery that cannot be sent
    as stored (an error no failure above names) is logged and marked failed, never retried."""
    stopped = Delivery.objects.filter(pk=delivery_id, status=Delivery.Status.PENDING, rule__enabled=False)
    if stopped.update(
        status=Delivery.Status.FAILED, finished_at=timezone.now(), last_category=Delivery.Failure.RULE_DISABLED
    ):
        return Outcome(Delivery.Status.FAILED)  # an operator disabled the rule: its retries stop with it
    if not _claim(delivery_id):
        return Outcome("busy")
    outcome = Outcome(Delivery.Status.FAILED)
    with periodic.Failures("notifications").guard(f"delivery {delivery_id}", mark=lambda _: _unsendable(delivery_id)):
        outcome = _send(Delivery.objects.select_related("rule").get(pk=delivery_id))
    return outcome


def _send(delivery: Delivery) -> Outcome:
    try:
        _mail(delivery) if delivery.channel == Channel.EMAIL else _post(delivery)
    except _Refused as exc:
        return _after_failure(delivery, exc)
    Delivery.objects.filter(pk=delivery.pk).update(
        status=Delivery.Status.SENT, finished_at=timezone.now(), last_status=None, last_category=""
    )
    return Outcome(Delivery.Status.SENT)


def _unsendable(delivery_id: int) -> None:
    Delivery.objects.filter(pk=delivery_id).update(
        status=Delivery.Status.FAILED, finished_at=timezone.now(), last_category=Delivery.Failure.INVALID
    )


def _after_failure(delivery: Delivery, failure: _Refused) -> Outcome:
    now = timezone.now()
    logger.warning(
        "[notifications] delivery %s attempt %s failed: %s %s",
        delivery.pk,
        delivery.attempts,
        failure.category,
        f"HTTP {failure.status}" if failure.status else failure.detail,
    )
    recorded = {"last_status": failure.status, "last_category": failure.category}
    if failure.retry and delivery.attempts < settings.NOTIFY_MAX_ATTEMPTS:
        wait = messages.backoff_seconds(delivery.attempts, settings.NOTIFY_RETRY_SECONDS)
        Delivery.objects.filter(pk=delivery.pk).update(next_attempt_at=now + timedelta(seconds=wait), **recorded)
        return Outcome(Delivery.Status.PENDING, retry_in=wait)
    status = Delivery.Status.GAVE_UP if failure.retry else Delivery.Status.FAILED
    Delivery.objects.filter(pk=delivery.pk).update(status=status, finished_at=now, **recorded)
    return Outcome(status)


def resend_due(*, batch: int = 200) -> dict[str, int]:
    """Backstop (beat): queue again the pending deliveries whose attempt is overdue by a minute,
    those a broker outage or a lost worker left behind. Claiming keeps a double queue harmless."""
    overdue = timezone.now() - timedelta(minutes=1)
    due = list(
        Delivery.objects.filter(status=Delivery.Status.PENDING, next_attempt_at__lte=overdue)
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:batch]
    )
    for pk in due:
        dispatch.send(DELIVER_TASK, pk)
    return {"queued": len(due)}
