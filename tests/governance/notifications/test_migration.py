"""Migrations of notifications. 0013, on deliveries written before it: the error texts (which held
the start of what a receiver answered, shown to every Viewer) become a status and a category and
are emptied, and the previous release, still serving while the migration runs, keeps writing rules
and deliveries. 0018: the digest window, which rules written around it do without."""

from __future__ import annotations

import pytest
from django.db import connection
from django.utils import timezone

from tests.support.migrations import back_at, migrate

BEFORE = [("governance", "0012_review_expiry_schedule")]
AFTER = [("governance", "0013_notification_targets")]
OLD_TEXTS = {
    "HTTP 500: Traceback (most recent call last): db.internal:5432": (500, "http_error"),
    "unreachable: timed out": (None, "timeout"),
    "unreachable: ConnectionRefusedError": (None, "connection"),
    "mail: SMTPRecipientsRefused: {'ops@example.com': (550, b'no such user')}": (None, "mail"),
    "the rule was disabled before this was sent": (None, "rule_disabled"),
    "": (None, ""),
}


@pytest.mark.django_db(transaction=True)
def test_old_error_texts_become_a_status_and_a_category_and_the_old_release_keeps_writing():
    with back_at(BEFORE) as old:
        rule_model, delivery_model = (
            old.get_model("governance", "NotificationRule"),
            old.get_model("governance", "Delivery"),
        )
        rule = rule_model.objects.create(
            name="ops", events=["escalation"], channel="signed_webhook", target="https://93.184.216.34/x"
        )

        def delivery(error: str) -> int:
            return delivery_model.objects.create(
                rule=rule,
                event="escalation",
                channel="signed_webhook",
                target=rule.target,
                payload={},
                status="failed",
                last_error=error,
                next_attempt_at=timezone.now(),
            ).pk

        ids = {delivery(text): expected for text, expected in OLD_TEXTS.items()}

        new = migrate(AFTER)
        # The previous release, unaware of the new columns, still inserts (database defaults).
        late_rule = rule_model.objects.create(
            name="late", events=["escalation"], channel="email", target="ops@example.com"
        )
        late = delivery("HTTP 502: written by the old release after the migration")

    rows = new.get_model("governance", "Delivery").objects.in_bulk()
    assert {pk: (rows[pk].last_status, rows[pk].last_category) for pk in ids} == ids
    assert (rows[late].last_status, rows[late].last_category) == (None, "")
    assert new.get_model("governance", "NotificationRule").objects.get(pk=late_rule.pk).internal is False
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM governance_delivery WHERE last_error <> '' AND id <> %s", [late])
        assert cursor.fetchone() == (0,)


@pytest.mark.django_db(transaction=True)
def test_rules_written_around_the_digest_migration_tell_each_event_at_once():
    """Migration 0018: rules from before it, and those the previous release adds while it runs
    (a database default), have no digest window."""
    with back_at([("governance", "0017_review_decision_amended")]) as old:
        rule_model = old.get_model("governance", "NotificationRule")
        before = rule_model.objects.create(name="before", events=["escalation"], channel="email", target="a@b.example")

        new = migrate([("governance", "0018_notification_digests")])
        late = rule_model.objects.create(name="late", events=["escalation"], channel="email", target="a@b.example")

    rules = new.get_model("governance", "NotificationRule").objects.in_bulk([before.pk, late.pk])
    assert [rules[pk].digest_seconds for pk in (before.pk, late.pk)] == [0, 0]
