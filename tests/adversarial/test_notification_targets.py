"""Notification webhooks against the outbound guard (sessions/providers/outbound.py), the one every
request the server makes on an operator's behalf goes through: a rule cannot aim the server at its
own loopback, the private network or a cloud metadata service, neither when it is saved nor when a
delivery is sent; and what a receiver answers never reaches a row or a page, only a status and a
category.

The receiver is a real HTTP server on 127.0.0.1, so it is reachable only by a rule marked internal.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
from django.core.exceptions import ValidationError

from governance.kernel.principals import Principal
from governance.notifications import services as notifications
from governance.notifications import tasks
from governance.notifications.models import Delivery, EventKind, NotificationRule
from tests.support.http_servers import answering_posts, serving
from tests.support.refusals import nothing_written

pytestmark = pytest.mark.django_db

CANARY = "CANARY-receiver-said: stack trace, internal hostnames, tokens"


class Receiver:
    """Counts the requests that reached it; answers each with ``status`` and a body holding the canary."""

    def __init__(self) -> None:
        self.url = ""
        self.status = 200
        self.hits = 0


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    state = Receiver()

    def answer(path: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
        state.hits += 1
        return state.status, CANARY.encode() * 20

    with serving(answering_posts(answer)) as url:
        state.url = url + "/hook"
        yield state


def save(admin_operator, target: str, *, name: str = "ops", **fields: object) -> NotificationRule:
    rule = NotificationRule(name=name, events=[EventKind.ESCALATION], channel="signed_webhook", target=target, **fields)
    return notifications.save_rule(rule, actor=Principal(user=admin_operator), changed=[])


def announce() -> list[Delivery]:
    return notifications.announce(
        EventKind.ESCALATION, agent=None, domain=None, title="Job escalated", link_path="/agents/", facts={}
    )


@pytest.mark.parametrize(
    "target",
    [
        "http://127.0.0.1:8000/hook",
        "https://localhost/hook",
        "https://10.0.0.7/hook",
        "https://[::1]/hook",
        "https://[::ffff:127.0.0.1]/hook",
        "http://93.184.216.34/hook",  # plain http to a public address: only for an internal rule
    ],
)
def test_a_rule_aimed_at_the_servers_own_network_is_refused_when_saved(admin_operator, target):
    with nothing_written(), pytest.raises(ValidationError) as refused:
        save(admin_operator, target)

    assert "target" in refused.value.message_dict


@pytest.mark.parametrize(
    "target",
    ["http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/", "http://[::ffff:169.254.169.254]/"],
)
def test_a_cloud_metadata_address_is_refused_even_for_an_internal_rule(admin_operator, target):
    with nothing_written(), pytest.raises(ValidationError) as refused:
        save(admin_operator, target, internal=True)

    assert "metadata" in " ".join(refused.value.message_dict["target"])


def test_the_admin_says_why_a_loopback_target_is_refused(client, admin_operator):
    admin_operator.is_staff = True
    admin_operator.save(update_fields=["is_staff"])
    client.force_login(admin_operator)
    form = {
        "name": "ops",
        "enabled": "on",
        "events": ["escalation"],
        "channel": "signed_webhook",
        "target": "https://127.0.0.1:6379/",
        "window_checks": "20",
    }

    page = client.post("/admin/governance/notificationrule/add/", form).content.decode()

    assert "a loopback address" in page
    assert NotificationRule.objects.count() == 0


def test_an_internal_rule_reaches_a_receiver_on_the_local_network(admin_operator, receiver):
    save(admin_operator, receiver.url, internal=True)

    (delivery,) = announce()

    assert notifications.attempt(delivery.pk).status == "sent"
    assert receiver.hits == 1


def test_a_rule_that_no_longer_passes_the_guard_sends_nothing(admin_operator, receiver):
    """A rule saved before the guard existed (or internal, then switched off behind the admin's
    back) is checked again at every send: the receiver on loopback is never contacted."""
    rule = save(admin_operator, receiver.url, internal=True)
    NotificationRule.objects.filter(pk=rule.pk).update(internal=False)
    (delivery,) = announce()

    outcome = notifications.attempt(delivery.pk)

    delivery.refresh_from_db()
    assert outcome.status == "failed"  # retrying would be refused the same way
    assert (delivery.last_category, delivery.last_status) == ("refused_address", None)
    assert receiver.hits == 0


def test_a_failing_receivers_answer_never_reaches_a_row_or_a_page(client, admin_operator, viewer, receiver):
    receiver.status = 500
    save(admin_operator, receiver.url, internal=True)
    (delivery,) = announce()

    notifications.attempt(delivery.pk)

    delivery.refresh_from_db()
    assert (delivery.status, delivery.last_status, delivery.last_category) == ("pending", 500, "http_error")
    row = json.dumps(list(Delivery.objects.values()), default=str)
    assert "CANARY" not in row
    for user in (viewer, admin_operator):
        user.is_staff = True
        user.save(update_fields=["is_staff"])
        client.force_login(user)
        listing = client.get("/admin/governance/delivery/").content.decode()
        page = client.get(f"/admin/governance/delivery/{delivery.pk}/change/").content.decode()
        assert "500" in page
        assert "CANARY" not in listing + page


def test_one_delivery_that_cannot_be_sent_is_marked_and_the_others_still_go(admin_operator, receiver, caplog):
    """A delivery row the sender cannot read (legacy data: an email without its subject) is
    logged and marked failed, once; the task never crashes on it again, and the rest are sent."""
    save(admin_operator, receiver.url, internal=True)
    bad, good = announce() + announce()
    Delivery.objects.filter(pk=bad.pk).update(channel="email", target="ops@example.com", payload={"body": "?"})

    with caplog.at_level(logging.ERROR):
        outcomes = [tasks.deliver.apply(args=[pk]).get() for pk in (bad.pk, good.pk)]

    assert outcomes == ["failed", "sent"]
    bad.refresh_from_db()
    assert (bad.status, bad.last_category) == ("failed", "invalid")
    assert f"delivery {bad.pk}" in caplog.text
    assert receiver.hits == 1
    assert notifications.resend_due() == {"queued": 0}
