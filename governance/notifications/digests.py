"""Digests: a rule with a window (``digest_seconds``) tells what happened in it in one message,
"12 new approvals from 3 agents", instead of one message per event.

``services.announce`` holds each event for such a rule as a ``DigestEntry``, in the event's
transaction. The beat task ``notifications.send_digests`` ends a rule's window ``digest_seconds``
after its first held event: one delivery tells every event held (a window of one event tells it as
it would have been told alone), and each entry keeps the delivery that told it, so nothing is told
twice and the digest's counts stay provable. The delivery is then sent, retried and recorded as any
other (``services.attempt``).

Two runs at once (two beats during a leader change, a run redelivered) never tell a window twice:
each locks the rule's row (``FOR NO KEY UPDATE SKIP LOCKED``) before reading its entries, so the
second skips the rule, and finds nothing due once the first has committed. Announcing is never
blocked by a run (an entry's insert takes only a key-share lock on the rule); an event committed
after the run read the window waits for the next one. A rule whose window cannot be told (an entry
that cannot be read back) is logged, its held entries given to a delivery marked ``failed`` /
``invalid`` so that the next run does not stumble on them again, and the other rules are told as
usual.
"""

from __future__ import annotations

import urllib.parse
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.db import transaction
from django.db.models import Count, Min, QuerySet
from django.urls import reverse
from django.utils import timezone

from governance.kernel import periodic
from governance.notifications import messages, services
from governance.notifications.models import DIGEST, TELLING, Channel, Delivery, DigestEntry, NotificationRule


def send_due() -> dict[str, Any]:
    """Beat task body: tell every rule whose window is over what it held, one message each."""
    now = timezone.now()
    failures = periodic.Failures("notifications")
    told = 0
    for rule_id in _due(now):
        # Not durable: periodic's guard holds each rule in a savepoint when the run is inside a transaction.
        with failures.guard(f"digest of rule {rule_id}", mark=partial(_untellable, rule_id)), transaction.atomic():
            told += _tell_window(rule_id, now)
    return {"told": told, **failures.as_dict()}


def _held(rule_id: int) -> QuerySet[DigestEntry]:
    return DigestEntry.objects.filter(rule_id=rule_id, delivery=None)


def _due(now: datetime) -> list[int]:
    """The rules whose first held event is at least their window old."""
    firsts = (
        DigestEntry.objects.filter(delivery=None)
        .values("rule", "rule__digest_seconds")
        .annotate(first=Min("created_at"))
        .order_by("first")
    )
    return [row["rule"] for row in firsts if row["first"] + timedelta(seconds=row["rule__digest_seconds"]) <= now]


def _tell_window(rule_id: int, now: datetime) -> int:
    """One delivery for what the rule held (1), or nothing when another run has the rule or has
    told its window meanwhile (0). The entries told are read once, so the counts are theirs."""
    rule = (
        NotificationRule.objects.select_for_update(no_key=True, skip_locked=True, of=("self",))
        .select_related("agent")
        .filter(pk=rule_id)
        .first()
    )
    if rule is None:
        return 0
    held = dict(_held(rule_id).values_list("pk", "created_at"))
    if not held or min(held.values()) + timedelta(seconds=rule.digest_seconds) > now:
        return 0
    window = DigestEntry.objects.filter(pk__in=held)
    if len(held) == 1:
        entry = window.get()
        delivery = services.queue(
            rule, event=entry.event, sent=services.payload(rule.channel, messages.Notice(**entry.notice))
        )
    else:
        told = _digest(rule, window, since=min(held.values()), until=max(held.values()))
        delivery = services.queue(rule, event=DIGEST, sent=_payload(rule.channel, told))
    window.update(delivery=delivery)
    return 1


def _digest(
    rule: NotificationRule, window: QuerySet[DigestEntry], *, since: datetime, until: datetime
) -> messages.Digest:
    counts = window.order_by().values_list("event").annotate(n=Count("pk")).order_by("-n", "event")
    agents = set(window.order_by().values_list("agent", flat=True).distinct())
    return messages.digest(
        counts=[(event, n, TELLING[event]) for event, n in counts],
        agents=len(agents - {""}),
        items=[messages.Notice(**entry.notice) for entry in window.order_by("pk")[: messages.DIGEST_ITEMS]],
        link=_inbox(rule, agents),
        since=since.isoformat(timespec="seconds"),
        until=until.isoformat(timespec="seconds"),
    )


def _inbox(rule: NotificationRule, agents: set[str]) -> str:
    """The inbox filtered to the rule's scope, or to the one agent every event came from."""
    filters = {"agent": rule.agent.agent_id} if rule.agent else {}
    if not filters and len(agents) == 1 and "" not in agents:
        filters = {"agent": next(iter(agents))}
    if rule.domain:
        filters["domain"] = rule.domain
    query = f"?{urllib.parse.urlencode(filters)}" if filters else ""
    return services.link(reverse("reviews:inbox") + query)


def _payload(channel: str, digest: messages.Digest) -> dict[str, object]:
    """A digest as ``channel`` tells it."""
    if channel == Channel.SLACK:
        return messages.slack_digest(digest)
    if channel == Channel.EMAIL:
        return messages.email_digest(digest)
    return messages.generic_digest(digest)


def _untellable(rule_id: int, error: Exception) -> None:
    """The rule's held entries go to a delivery marked failed (``invalid``): told as not sent, never
    tried again at every run."""
    rule = NotificationRule.objects.get(pk=rule_id)
    now = timezone.now()
    delivery = Delivery.objects.create(
        rule=rule,
        event=DIGEST,
        channel=rule.channel,
        target=rule.target,
        payload={},
        status=Delivery.Status.FAILED,
        last_category=Delivery.Failure.INVALID,
        next_attempt_at=now,
        finished_at=now,
    )
    _held(rule_id).update(delivery=delivery)
